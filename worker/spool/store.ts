/**
 * The spool in Redis: one list per event channel, `${prefix}spool:{channel}`, oldest entry at the
 * head (RPUSH appends, the drain reads from index 0). Entries the origin refused for good move to
 * `${prefix}spool-dead:{channel}`. One drainer at a time holds `${prefix}spool-lock`.
 *
 * Every write that touches an entry and a claim is one Lua script, so Redis applies both or
 * neither: a crash (or a timeout) between them can neither lose an event whose claim says
 * `spooled`, nor leave an entry whose claim was never marked.
 * - spool: only while the claim is still ours (or gone), and the list is below its bound:
 *   RPUSH the entry + SET the claim `spooled|hash` EX dedup TTL.
 * - ack:   LREM that exact entry + SET the claim `done|hash` (unless another attempt holds it).
 * - bury:  LREM that exact entry + RPUSH it to the dead list.
 * @module
 */
import { CHANNELS, type Channel } from '../../contract/event'
import type { RedisPort } from '../dedup/redis'

/** KEYS: claim, list. ARGV: our inflight value, spooled value, TTL s, entry, max entries. */
const SPOOL_SCRIPT = `local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return v end
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[5]) then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[4])
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1`

/** KEYS: list, claim. ARGV: entry, spooled value, done value, TTL s. */
const ACK_SCRIPT = `local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
local v = redis.call('GET', KEYS[2])
if v == ARGV[2] or not v then redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[4]) end
return removed`

/** KEYS: list, dead list. ARGV: entry. */
const BURY_SCRIPT = `local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
if removed > 0 then redis.call('RPUSH', KEYS[2], ARGV[1]) end
return removed`

const PEEK_SCRIPT = `return redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)`

const LENGTHS_SCRIPT = `local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('LLEN', key) end
return out`

const UNLOCK_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`

export type SpoolWrite =
  /** In the list, claim marked `spooled`. */
  | { status: 'spooled' }
  /** The list is at its bound; nothing written, the claim untouched. */
  | { status: 'full' }
  /** The claim is no longer ours (lease ran out and another attempt took it): nothing written. */
  | { status: 'claim_taken'; value: string }

export interface SpoolDepth {
  /** Entries waiting, by channel (only channels with any). */
  waiting: Partial<Record<Channel, number>>
  /** Entries in the dead lists, by channel (only channels with any). */
  dead: Partial<Record<Channel, number>>
  total: number
  totalDead: number
}

export class SpoolStore {
  constructor(
    private readonly redis: RedisPort,
    private readonly prefix: string,
  ) {}

  listKey(channel: Channel): string {
    return `${this.prefix}spool:${channel}`
  }

  deadKey(channel: Channel): string {
    return `${this.prefix}spool-dead:${channel}`
  }

  lockKey(): string {
    return `${this.prefix}spool-lock`
  }

  /** The claim's full Redis key for an entry's prefix-less `claimKey`. */
  claimRedisKey(claimKey: string): string {
    return `${this.prefix}${claimKey}`
  }

  /**
   * Appends `entry` and marks the claim, atomically, if the claim at `claimRedisKey` is still
   * `ownValue` (or has expired). Throws when Redis does not answer: then nothing is known to be
   * written, and the caller must not answer "ok".
   */
  async spool(
    channel: Channel,
    claimRedisKey: string,
    ownValue: string,
    spooledValue: string,
    ttlSeconds: number,
    entry: string,
    maxEntries: number,
  ): Promise<SpoolWrite> {
    const result = await this.redis.evalScript(
      SPOOL_SCRIPT,
      [claimRedisKey, this.listKey(channel)],
      [ownValue, spooledValue, String(ttlSeconds), entry, String(maxEntries)],
    )
    if (typeof result === 'string') return { status: 'claim_taken', value: result }
    return Number(result) === 1 ? { status: 'spooled' } : { status: 'full' }
  }

  /** The oldest `count` entries of a channel, oldest first. */
  async peek(channel: Channel, count: number): Promise<string[]> {
    const result = await this.redis.evalScript(
      PEEK_SCRIPT,
      [this.listKey(channel)],
      [String(count)],
    )
    return Array.isArray(result) ? result.map(String) : []
  }

  /** The origin took the entry: remove it and mark its claim done. False if it was gone already. */
  async ack(
    channel: Channel,
    entry: string,
    claimRedisKey: string,
    spooledValue: string,
    doneValue: string,
    ttlSeconds: number,
  ): Promise<boolean> {
    const removed = await this.redis.evalScript(
      ACK_SCRIPT,
      [this.listKey(channel), claimRedisKey],
      [entry, spooledValue, doneValue, String(ttlSeconds)],
    )
    return Number(removed) > 0
  }

  /** The origin will never take the entry: move it to the channel's dead list. */
  async bury(channel: Channel, entry: string): Promise<boolean> {
    const removed = await this.redis.evalScript(
      BURY_SCRIPT,
      [this.listKey(channel), this.deadKey(channel)],
      [entry],
    )
    return Number(removed) > 0
  }

  async depth(): Promise<SpoolDepth> {
    const keys = [...CHANNELS.map((c) => this.listKey(c)), ...CHANNELS.map((c) => this.deadKey(c))]
    const result = await this.redis.evalScript(LENGTHS_SCRIPT, keys, [])
    const lengths = Array.isArray(result) ? result.map(Number) : []
    const depth: SpoolDepth = { waiting: {}, dead: {}, total: 0, totalDead: 0 }
    CHANNELS.forEach((channel, i) => {
      const waiting = lengths[i] ?? 0
      const dead = lengths[i + CHANNELS.length] ?? 0
      if (waiting > 0) depth.waiting[channel] = waiting
      if (dead > 0) depth.dead[channel] = dead
      depth.total += waiting
      depth.totalDead += dead
    })
    return depth
  }

  /** One drainer at a time: `SET lock token NX PX ms`. True when this call took it. */
  async lock(token: string, pxMs: number): Promise<boolean> {
    return (await this.redis.setNxGet(this.lockKey(), token, pxMs)) === null
  }

  /** Gives the lock back, only if it is still ours. */
  async unlock(token: string): Promise<void> {
    await this.redis.evalScript(UNLOCK_SCRIPT, [this.lockKey()], [token])
  }
}
