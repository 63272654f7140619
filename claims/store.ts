/**
 * The claim protocol: at most one forward of a delivery at a time, and none after the origin has
 * taken it, without ever answering "duplicate" for a delivery whose first attempt failed. The
 * states are in claims/states.ts, the scripts in claims/lua-scripts.ts.
 *
 * - claim:     `SET key inflight|tok|hash NX PX lease GET`, one round trip that also returns what
 *              was there: claimed | settled (done/spooled, with its hash) | inflight.
 * - complete:  `done|hash` (or `spooled|hash`) EX ttl, only if the value is still ours (or gone:
 *              the origin took it, so done is the truth); another attempt's claim is never touched.
 * - release:   deletes the key only if the value is still ours (compare-and-delete).
 * - delivered: a queued event reached the origin: `spooled|hash` (or nothing: Redis was flushed)
 *              becomes `done|hash`; an attempt holding the key in flight is left alone.
 * - replayed:  the same for a dead letter an operator replayed (the queue gave up on it, so the
 *              key is still `spooled`), keeping the time the key had left.
 * - record:    `SET key done|hash NX EX ttl GET` for deliveries that are remembered, not forwarded.
 * Keys are delivery keys (`dedup:...`, claims/keys.ts); the store adds the deployment's prefix.
 * Any Redis error or timeout is `unavailable`: the caller fails open (forwards; Postgres decides).
 * @module
 */
import {
  DELETE_IF_OURS,
  READ_HASH,
  READ_VALUE,
  READ_WITH_TTL,
  SET_IF_OURS_OR_GONE,
  SET_IF_SAME_KEEPING_TTL,
} from './lua-scripts'
import type { SettledMemo } from './memo'
import type { PipelineReply, RedisPort } from './port'
import { type ClaimOutcome, decodeValue, inflightValue, settledValue } from './states'

export interface ClaimStoreSettings {
  claimLeaseMs: number
  dedupTtlSeconds: number
  redisKeyPrefix: string
}

export class ClaimStore {
  constructor(
    private readonly redis: RedisPort,
    private readonly settings: ClaimStoreSettings,
    /** Keys this isolate saw settled `done` (off unless configured); runClaimed consults it. */
    readonly memo: SettledMemo | null = null,
  ) {}

  /** The Redis key of a delivery key: the deployment's prefix + `dedup:...`. */
  redisKey(deliveryKey: string): string {
    return `${this.settings.redisKeyPrefix}${deliveryKey}`
  }

  async claim(key: string, token: string, hash: string): Promise<ClaimOutcome> {
    try {
      const existing = await this.redis.setNxGet(
        this.redisKey(key),
        inflightValue(token, hash),
        this.settings.claimLeaseMs,
      )
      if (existing === null) return { status: 'claimed' }
      // Our own claim, seen again (a poll after a timed-out first call that did land).
      if (existing === inflightValue(token, hash)) return { status: 'claimed' }
      return existing === '' ? { status: 'inflight', hash: null } : decodeValue(existing)
    } catch (error) {
      return { status: 'unavailable', error }
    }
  }

  /**
   * The origin took it (or the queue has it): settled, unless another attempt holds the key.
   * `ttlSeconds`: the channel's own dedup TTL (claims/settings.ts); default DEDUP_TTL_SECONDS.
   * `count`: a stats field counted in the same round trip (one subrequest, not two).
   */
  async complete(
    key: string,
    token: string,
    hash: string,
    state: 'done' | 'spooled' = 'done',
    ttlSeconds = this.settings.dedupTtlSeconds,
    count?: string,
  ): Promise<boolean> {
    const settle = this.setIfCommand(
      key,
      inflightValue(token, hash),
      settledValue(state, hash),
      ttlSeconds,
    )
    const stats = this.redisKey('dedup:stats')
    const [settled] = await this.redis.pipeline(
      count === undefined ? [settle] : [settle, ['HINCRBY', stats, count, 1]],
    )
    return wrote(settled)
  }

  /**
   * A queue consumer's batch reached the origin: each event's `spooled` (or a flushed key) becomes
   * `done`, and the stats hash is counted by `counts` (field → how many), all in one round trip
   * (one subrequest for the batch, not two an event). Per item: whether it wrote; a reply that
   * was an error is false, as a key another attempt holds is.
   */
  async deliveredAll(
    items: readonly { key: string; hash: string; ttlSeconds?: number }[],
    counts: Readonly<Record<string, number>> = {},
  ): Promise<boolean[]> {
    const settle = items.map(({ key, hash, ttlSeconds = this.settings.dedupTtlSeconds }) =>
      this.setIfCommand(key, settledValue('spooled', hash), settledValue('done', hash), ttlSeconds),
    )
    const stats = this.redisKey('dedup:stats')
    const count = Object.entries(counts)
      .filter(([, by]) => by > 0)
      .map(([field, by]) => ['HINCRBY', stats, field, by] as const)
    const replies = await this.redis.pipeline([...settle, ...count])
    return items.map((_, i) => wrote(replies[i]))
  }

  /**
   * A dead letter's replay stored its event: `spooled|hash` becomes `done|hash` with the time it
   * had left, and a key gone meanwhile is `done` for the default TTL; any other state (in flight,
   * another payload, done already) is left alone. True when it wrote.
   */
  async replayed(key: string, hash: string): Promise<boolean> {
    const result = await this.redis.evalScript(
      SET_IF_SAME_KEEPING_TTL,
      [this.redisKey(key)],
      [
        settledValue('spooled', hash),
        settledValue('done', hash),
        String(this.settings.dedupTtlSeconds),
      ],
    )
    return Number(result) === 1
  }

  /** Lets the vendor's retry claim again. Deletes only our own claim. */
  async release(key: string, token: string, hash: string): Promise<boolean> {
    const result = await this.redis.evalScript(
      DELETE_IF_OURS,
      [this.redisKey(key)],
      [inflightValue(token, hash)],
    )
    return Number(result) === 1
  }

  /** Remembers a delivery that is never forwarded; `claimed` means this was the first. */
  async record(
    key: string,
    hash: string,
    ttlSeconds = this.settings.dedupTtlSeconds,
  ): Promise<ClaimOutcome> {
    try {
      const existing = await this.redis.setNxGetEx(
        this.redisKey(key),
        settledValue('done', hash),
        ttlSeconds,
      )
      return existing === null ? { status: 'claimed' } : decodeValue(existing || 'done|')
    } catch (error) {
      return { status: 'unavailable', error }
    }
  }

  /**
   * A replay found the key in flight: poll (by claiming again, so a released or expired key is
   * taken at once) until it settles, this attempt claims it, or `untilMs` (epoch ms) passes.
   */
  async waitWhileInflight(
    key: string,
    token: string,
    hash: string,
    untilMs: number,
    pollMs = 100,
  ): Promise<ClaimOutcome> {
    let outcome: ClaimOutcome = { status: 'inflight', hash: null }
    while (Date.now() + pollMs <= untilMs) {
      await new Promise((resolve) => setTimeout(resolve, pollMs))
      outcome = await this.claim(key, token, hash)
      if (outcome.status !== 'inflight') return outcome
    }
    return outcome
  }

  /**
   * Keeps a value beside a claim for as long as its `done` (an Idempotency-Key's stored answer,
   * claims/idempotency.ts): the first write wins, as the first completed request does.
   */
  async keep(key: string, value: string, ttlSeconds: number): Promise<void> {
    await this.redis.setNxGetEx(this.redisKey(key), value, ttlSeconds)
  }

  /** A value {@link keep} stored; null when there is none (expired, evicted, never written). */
  async kept(key: string): Promise<string | null> {
    const value = await this.redis.evalScript(READ_VALUE, [this.redisKey(key)], [])
    return typeof value === 'string' ? value : null
  }

  /**
   * One more in the stats hash (`{prefix}dedup:stats`): payload mismatches and the spool's
   * queued / retried / dead-lettered / delivered counts, by channel. Failure paths only, so the
   * hot path pays nothing for it.
   */
  async count(field: string): Promise<void> {
    await this.redis.hincrby(this.redisKey('dedup:stats'), field, 1)
  }

  /** The stats hash, for the operator's health view. */
  async stats(): Promise<Record<string, number>> {
    const flat = await this.redis.evalScript(READ_HASH, [this.redisKey('dedup:stats')], [])
    const out: Record<string, number> = {}
    if (Array.isArray(flat)) {
      for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = Number(flat[i + 1])
    }
    return out
  }

  /** A delivery key's claim as it stands (state, hash, ms left), for the operator; null: none. */
  async inspect(
    key: string,
  ): Promise<
    (Exclude<ClaimOutcome, { status: 'claimed' | 'unavailable' }> & { ttlMs: number }) | null
  > {
    const found = await this.redis.evalScript(READ_WITH_TTL, [this.redisKey(key)], [])
    if (!Array.isArray(found)) return null
    return { ...decodeValue(String(found[0])), ttlMs: Number(found[1]) }
  }

  async ping(): Promise<void> {
    await this.redis.ping()
  }

  /** The compare-and-set (SET_IF_OURS_OR_GONE) as one command of a pipeline. */
  private setIfCommand(key: string, expected: string, next: string, ttlSeconds: number) {
    const args = [expected, next, String(ttlSeconds)] as const
    return ['EVAL', SET_IF_OURS_OR_GONE, 1, this.redisKey(key), ...args] as const
  }
}

/** Whether a compare-and-set's pipeline reply says it wrote (1); an error reply is false. */
function wrote(reply: PipelineReply | undefined): boolean {
  return reply !== undefined && 'result' in reply && Number(reply.result) === 1
}
