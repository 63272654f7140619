/**
 * The states of a claim and how they are written in Redis. One string per delivery key, kept
 * short (about 20-45 bytes):
 *   inflight|{token}|{hash}   claimed by one attempt, PX lease (outlives one forward)
 *   done|{hash}               the origin took it (new or duplicate), EX dedup TTL
 *   spooled|{hash}            on the spool queue for a later forward, EX dedup TTL
 * `{hash}` is the event's payload hash, so a replay with another payload under the same key is seen.
 * @module
 */

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
