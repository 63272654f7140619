/**
 * The claim protocol: at most one forward of a delivery at a time, and none after the origin has
 * taken it, without ever answering "duplicate" for a delivery whose first attempt failed.
 *
 * One Redis string per delivery key, in one of these states (values kept short: ~20-45 bytes):
 *   inflight|{token}|{hash}   claimed by one attempt, PX lease (outlives one forward)
 *   done|{hash}               the origin took it (new or duplicate), EX dedup TTL
 *   spooled|{hash}            on the spool queue for a later forward, EX dedup TTL
 * `{hash}` is the event's payload hash, so a replay with another payload under the same key is seen.
 *
 * - claim:    `SET key inflight|tok|hash NX PX lease GET`, one round trip that also returns what
 *             was there: claimed | settled (done/spooled, with its hash) | inflight.
 * - complete: a script sets `done|hash EX ttl` only if the value is still ours (or gone: the
 *             origin took it, so done is the truth); another attempt's claim is never overwritten.
 * - release:  a script deletes the key only if the value is still ours (compare-and-delete).
 * - record:   `SET key done|hash NX EX ttl GET` for deliveries that are remembered, not forwarded.
 * - delivered: the spool consumer's forward was taken: `spooled|hash` (or nothing: Redis was
 *             flushed) becomes `done|hash`; an attempt holding the key in flight is left alone.
 * Any Redis error or timeout is `unavailable`: the caller fails open (forwards; Postgres decides).
 * @module
 */
import type { RedisPort } from './redis'

export const ClaimState = {
  inflight: 'inflight',
  done: 'done',
  spooled: 'spooled',
} as const
export type ClaimState = (typeof ClaimState)[keyof typeof ClaimState]

export type ClaimOutcome =
  /** This attempt holds the claim; only the holder of `token` may complete or release it. */
  | { status: 'claimed' }
  /** The origin (or the spool) already has it. `hash` null when the value was not ours to read. */
  | { status: 'settled'; state: 'done' | 'spooled'; hash: string | null }
  /** Another attempt holds the claim right now. */
  | { status: 'inflight'; hash: string | null }
  /** Redis did not answer within its budget (or errored). */
  | { status: 'unavailable'; error: unknown }

export interface ClaimSettings {
  claimLeaseMs: number
  dedupTtlSeconds: number
}

/** Compare-and-set: ARGV[2] with EX ARGV[3] if the value is ARGV[1] or gone. */
const SET_IF_SCRIPT = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] or v == false then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0`

const RELEASE_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`

/** 64 random bits: tells one attempt's claim from another's. */
export function newClaimToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8))
  let out = ''
  for (const b of bytes) out += b.toString(16).padStart(2, '0')
  return out
}

export function inflightValue(token: string, hash: string): string {
  return `${ClaimState.inflight}|${token}|${hash}`
}

export function settledValue(state: 'done' | 'spooled', hash: string): string {
  return `${state}|${hash}`
}

/** Reads a stored value. Anything unknown (e.g. an older "1" flag) counts as done: it was seen. */
export function decodeValue(
  value: string,
): Exclude<ClaimOutcome, { status: 'claimed' | 'unavailable' }> {
  const [state, first, second] = value.split('|')
  if (state === ClaimState.inflight) return { status: 'inflight', hash: second ?? null }
  if (state === ClaimState.spooled)
    return { status: 'settled', state: 'spooled', hash: first ?? null }
  return {
    status: 'settled',
    state: 'done',
    hash: state === ClaimState.done ? (first ?? null) : null,
  }
}

export class ClaimStore {
  constructor(
    private readonly redis: RedisPort,
    private readonly settings: ClaimSettings,
    /** Key of the small stats hash (payload mismatches by channel). */
    private readonly statsKey: string,
  ) {}

  async claim(key: string, token: string, hash: string): Promise<ClaimOutcome> {
    try {
      const existing = await this.redis.setNxGet(
        key,
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

  /** The origin took it: `done` for the dedup TTL, unless another attempt holds the key now. */
  async complete(key: string, token: string, hash: string, state: 'done' | 'spooled' = 'done') {
    const result = await this.redis.evalScript(
      SET_IF_SCRIPT,
      [key],
      [
        inflightValue(token, hash),
        settledValue(state, hash),
        String(this.settings.dedupTtlSeconds),
      ],
    )
    return Number(result) === 1
  }

  /** A queued event reached the origin: `spooled` (or a flushed key) becomes `done`. */
  async delivered(key: string, hash: string): Promise<boolean> {
    const result = await this.redis.evalScript(
      SET_IF_SCRIPT,
      [key],
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
    const result = await this.redis.evalScript(RELEASE_SCRIPT, [key], [inflightValue(token, hash)])
    return Number(result) === 1
  }

  /** Remembers a delivery that is never forwarded; `claimed` means this was the first. */
  async record(key: string, hash: string): Promise<ClaimOutcome> {
    try {
      const existing = await this.redis.setNxGetEx(
        key,
        settledValue('done', hash),
        this.settings.dedupTtlSeconds,
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

  async countPayloadMismatch(channel: string): Promise<void> {
    await this.count(`payload_mismatch:${channel}`)
  }

  /**
   * One more in the stats hash (`{prefix}dedup:stats`): payload mismatches and the spool's
   * queued / retried / dead-lettered / delivered counts, by channel. Failure paths only, so the
   * hot path pays nothing for it.
   */
  async count(field: string): Promise<void> {
    await this.redis.hincrby(this.statsKey, field, 1)
  }

  /** The stats hash, for the operator's health view. */
  async stats(): Promise<Record<string, number>> {
    const flat = await this.redis.evalScript(
      `return redis.call('HGETALL', KEYS[1])`,
      [this.statsKey],
      [],
    )
    const out: Record<string, number> = {}
    if (Array.isArray(flat)) {
      for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = Number(flat[i + 1])
    }
    return out
  }

  async ping(): Promise<void> {
    await this.redis.ping()
  }
}
