/**
 * The isolate's memo of KV lookups (reader.ts), shaped so requests nobody signed cannot push out
 * what signed ones need: found answers are held apart from "KV holds no such key" ones (a
 * random id is one of those), found ones least-recently-used first out (a hit refreshes),
 * absent ones in a smaller map, oldest first out; and at most {@link KV_MISSES_PER_SECOND} KV
 * gets per isolate each second, past which a lookup is the retry answer without touching KV, so
 * random ids cannot run up KV reads or hold the isolate's admission slots waiting on them.
 * @module
 */

/** Found answers (records, index entries) each isolate keeps. */
export const MEMO_ENTRIES = 10_000
/** Absent answers each isolate keeps (an unknown id is cheap to ask again, within the budget). */
export const NEGATIVE_ENTRIES = 1_000
/** KV gets per isolate per second; a memo hit costs none. */
export const KV_MISSES_PER_SECOND = 200

/** The answer to a lookup over the isolate's KV budget. */
export const OVER_BUDGET = { kind: 'unavailable', reason: 'kv_budget' } as const

interface Held<T> {
  expiresAt: number
  lookup: T
}

export interface MemoLimits {
  entries: number
  negatives: number
  missesPerSecond: number
  /** How long a found answer is held; an absent one a fifth of it (at least a second). */
  cacheMs: number
}

export class LookupMemo<T extends { kind: string }> {
  private readonly found = new Map<string, Held<T>>()
  private readonly absent = new Map<string, Held<T>>()
  private windowStart = 0
  private misses = 0

  constructor(private readonly limits: MemoLimits) {}

  /**
   * The held answer of `key`, or `read()`'s (one KV get) within the budget. Requests that miss at
   * once each read: a request never waits on a get another started, since workerd binds an I/O
   * promise to the request that made it, and code resumed by another request's I/O may be refused
   * its own ("Cannot perform I/O on behalf of a different request": seen in `npm run bench` as
   * 500s and refused queue sends, at the moments an absent entry expired under load).
   */
  get(key: string, read: () => Promise<T>, now = Date.now()): Promise<T | typeof OVER_BUDGET> {
    const held = this.held(this.found, key, now) ?? this.held(this.absent, key, now)
    if (held) {
      if (held.lookup.kind === 'found') {
        this.found.delete(key)
        this.found.set(key, held)
      }
      return Promise.resolve(held.lookup)
    }
    if (now - this.windowStart >= 1_000) {
      this.windowStart = now
      this.misses = 0
    }
    if (this.misses >= this.limits.missesPerSecond) return Promise.resolve(OVER_BUDGET)
    this.misses += 1
    return read().then((result) => {
      this.keep(key, result, now)
      return result
    })
  }

  private held(map: Map<string, Held<T>>, key: string, now: number): Held<T> | undefined {
    const held = map.get(key)
    if (held && held.expiresAt <= now) {
      map.delete(key)
      return undefined
    }
    return held
  }

  /** An unavailable answer is not kept: the next request asks KV again. */
  private keep(key: string, result: T, now: number): void {
    const { cacheMs, entries, negatives } = this.limits
    if (result.kind === 'found') {
      this.found.set(key, { expiresAt: now + cacheMs, lookup: result })
      evictOldest(this.found, entries)
    } else if (result.kind === 'none') {
      this.absent.set(key, { expiresAt: now + Math.max(1_000, cacheMs / 5), lookup: result })
      evictOldest(this.absent, negatives)
    }
  }
}

function evictOldest(map: Map<string, unknown>, bound: number): void {
  while (map.size > bound) map.delete(map.keys().next().value as string)
}
