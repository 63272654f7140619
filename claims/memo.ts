/**
 * A bounded in-isolate memo of delivery keys this isolate has seen settled as `done`, each with
 * the payload hash it was settled with. It may only ever answer "done, same payload": a key it
 * does not hold (never seen, evicted, expired, another payload) is asked of Redis, so
 * the memo cannot lose an event, only skip a Redis round trip for a replay it has already seen.
 * `spooled` is never remembered (a dead-lettered event may be replayed by an operator), nor an
 * in-flight claim.
 *
 * Off by default (SETTLED_MEMO_ENTRIES=0): a vendor's retries mostly land on other isolates and
 * other locations, so the benchmark's single isolate would flatter it.
 * @module
 */

export interface SettledMemoSettings {
  /** At most this many keys; the oldest go first. 0 = no memo. */
  maxEntries: number
  /** An entry is forgotten after this long (never longer than the dedup TTL). */
  maxAgeMs: number
}

export class SettledMemo {
  /** Key → [payload hash, epoch ms remembered]; a Map iterates in insertion order (oldest first). */
  private readonly entries = new Map<string, readonly [string, number]>()

  constructor(
    private readonly settings: SettledMemoSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** True only when `key` was settled `done` here with this exact payload hash, recently. */
  isDone(key: string, hash: string): boolean {
    const entry = this.entries.get(key)
    if (!entry) return false
    if (this.now() - entry[1] > this.settings.maxAgeMs) {
      this.entries.delete(key)
      return false
    }
    return entry[0] === hash
  }

  /** `key` is `done` in Redis with this payload hash (we completed it, or a replay read it). */
  rememberDone(key: string, hash: string): void {
    this.entries.delete(key)
    this.entries.set(key, [hash, this.now()])
    while (this.entries.size > this.settings.maxEntries) {
      const oldest = this.entries.keys().next()
      if (oldest.done) break
      this.entries.delete(oldest.value)
    }
  }

  get size(): number {
    return this.entries.size
  }
}

/** The memo these settings ask for, or null (the default: off). */
export function settledMemo(settings: SettledMemoSettings): SettledMemo | null {
  return settings.maxEntries > 0 ? new SettledMemo(settings) : null
}
