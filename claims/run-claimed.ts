/**
 * A claim's whole life in one place, for every caller (the Worker's delivery core, the origin's
 * Gmail poller): claim → (wait while another attempt holds it) → work → complete, mark spooled or
 * release, only ever our own claim. The work says how the claim ends; this handler does the Redis
 * side of it, so no caller writes the protocol again.
 * @module
 */

import { newClaimToken, sameHash } from './states'
import type { ClaimStore } from './store'

/** How this attempt stands with the claim while its work runs. */
export type ClaimHold =
  /** We hold the claim. */
  | { redis: 'ok' }
  /** Redis did not answer in time: proceed, Postgres decides. Our SET may have landed. */
  | { redis: 'unavailable'; error: unknown }
  /** No Redis configured. */
  | { redis: 'not_configured' }
  /** Another attempt holds it and the caller chose to proceed anyway (Postgres decides). */
  | { redis: 'inflight' }

/** How the work wants the claim to end: the origin has it, the queue has it, or let go. */
export type ClaimEnd = 'done' | 'spooled' | 'release'

/** The work's result and how its claim ends. */
export interface Finished<R> {
  result: R
  end: ClaimEnd
  /**
   * A field of the stats hash to count once the claim settles, in the settle's own round trip
   * (the spool's `spool_queued:{channel}`): counted even when the settle finds the key another's.
   */
  count?: string
}

export interface Settled {
  state: 'done' | 'spooled'
  /** The stored hash differs from this attempt's: a replay with other content (first kept). */
  payloadMismatch: boolean
  /** Who said so: Redis, or this isolate's memo of settled keys (claims/memo.ts, off by default). */
  from: 'redis' | 'memo'
  /** The hash Redis holds for the key (a 56-bit prefix when settled); null when none is kept. */
  storedHash: string | null
}

export interface ClaimedWork<R> {
  /** The origin (or the queue) already has it: the answer without doing the work. */
  settled(settled: Settled): R | Promise<R>
  /** Still held by another attempt after the wait. Absent: proceed anyway, unclaimed. */
  inflight?(): R | Promise<R>
  /** The work itself, and how the claim is to end. A throw releases the claim. */
  run(hold: ClaimHold): Promise<Finished<R>>
}

export interface RunClaimedOptions {
  /** The delivery key (`dedup:...`). */
  key: string
  /** The event's payload hash (part of every claim value). */
  hash: string
  /** Epoch ms until which a claim held by another attempt is waited for. @default no wait */
  waitUntilMs?: number
  /** How long `done` / `spooled` absorb replays (the channel's own TTL). @default the store's */
  ttlSeconds?: number
  /**
   * Where a `done` / `spooled` write goes: awaited (default), or handed to the runtime to finish
   * after the answer (`ctx.waitUntil`). A release is awaited while `releaseNow()` says so (a
   * vendor retry right after the answer can then claim at once), else handed over too.
   */
  later?: (work: Promise<unknown>) => void
  releaseNow?: () => boolean
}

export async function runClaimed<R>(
  store: ClaimStore | null,
  options: RunClaimedOptions,
  work: ClaimedWork<R>,
): Promise<R> {
  if (!store) return (await work.run({ redis: 'not_configured' })).result
  const { key, hash } = options
  const { memo } = store
  // The memo's only answer: done, with this very payload. Anything else asks Redis.
  if (memo?.isDone(key, hash))
    return work.settled({ state: 'done', payloadMismatch: false, from: 'memo', storedHash: hash })
  const token = newClaimToken()
  let outcome = await store.claim(key, token, hash)
  if (outcome.status === 'inflight' && options.waitUntilMs !== undefined) {
    // Not a 200 that could hide the other attempt's failure: wait briefly for its outcome,
    // taking over if it lets go.
    outcome = await store.waitWhileInflight(key, token, hash, options.waitUntilMs)
  }
  let hold: ClaimHold
  switch (outcome.status) {
    case 'settled': {
      const payloadMismatch = outcome.hash !== null && !sameHash(outcome.hash, hash)
      if (outcome.state === 'done' && outcome.hash !== null && !payloadMismatch) {
        memo?.rememberDone(key, hash)
      }
      return work.settled({
        state: outcome.state,
        payloadMismatch,
        from: 'redis',
        storedHash: outcome.hash,
      })
    }
    case 'inflight':
      if (work.inflight) return work.inflight()
      // Not ours to settle: Postgres decides between the two attempts.
      return (await work.run({ redis: 'inflight' })).result
    case 'unavailable':
      hold = { redis: 'unavailable', error: outcome.error }
      break
    case 'claimed':
      hold = { redis: 'ok' }
      break
  }

  const quietly = (write: Promise<unknown>) => write.catch(() => false)
  const release = () => {
    // A release that fails leaves the key until its lease ends; the vendor's retry then waits or
    // gets another retry answer, which is safe.
    const done = quietly(store.release(key, token, hash))
    if (options.later && options.releaseNow && !options.releaseNow()) options.later(done)
    else return done
  }
  let finished: Finished<R>
  try {
    finished = await work.run(hold)
  } catch (err) {
    await release()
    throw err
  }
  if (finished.end === 'release') {
    await release()
  } else {
    const end = finished.end
    const completing = store.complete(key, token, hash, end, options.ttlSeconds, finished.count)
    const settle = quietly(completing).then((ok) => {
      if (ok && end === 'done') memo?.rememberDone(key, hash)
      return ok
    })
    if (options.later) options.later(settle)
    else await settle
  }
  return finished.result
}
