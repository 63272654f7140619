/**
 * Idempotency-Key's protocol (draft-ietf-httpapi-idempotency-key-header) for our own POST routes:
 * the delivery claim's lifecycle ({@link runClaimed}: claim → run → settle or release) under a
 * request's scope, plus the stored answer. No HTTP here: idempotency-http/ reads the header, runs
 * a route through {@link runIdempotent} and words its outcome (a replay, a problem).
 * - scope: (tenant, route, key); the claim's hash is the request's fingerprint (method, path,
 *   canonical body), so the same key with another request is seen in Redis (`reused`);
 * - first request: the route runs; a final 2xx is stored (Redis beside the claim, and Postgres:
 *   the route's own work, or `durable`), the claim settles `done`;
 * - a 202 (queued, not landed yet) settles `spooled`: a retry runs again and gets the stored
 *   answer once the work has landed;
 * - a 4xx or 5xx (or a throw, a timeout) is not stored: the claim is released, a retry runs again;
 * - a repeat while the first runs: `in_use`; after it: the stored answer (`replayed`), nothing run;
 * - Redis down or its answer gone: the route runs unclaimed, and Postgres decides.
 * @module
 */
import type { IdempotentRequest } from '../contract/idempotency'
import { sha256Hex } from '../shared/crypto'
import { type ClaimEnd, type ClaimHold, runClaimed } from './run-claimed'
import type { ClaimStore } from './store'

/** What the route reads of its request once the protocol has let it run. */
export interface IdempotentCall extends IdempotentRequest {
  tenant: string
  /** The client's key as sent (unquoted). */
  key: string
  /** The body the fingerprint was taken over (bounded), for the route to parse. */
  body: string
}

/** A stored answer as the durable layer (Postgres) holds it. */
export interface DurableAnswer {
  fingerprint: string
  status: number
  body: unknown
}

/** The Postgres layer, for a route whose own work does not store its answer (the origin's). */
export interface DurableAnswers {
  find(call: IdempotentCall): Promise<DurableAnswer | null>
  save(call: IdempotentCall, answer: { status: number; body: unknown }): Promise<void>
}

/**
 * What the protocol answered itself, the route not run: a stored answer replayed, another request
 * under the key, or the key in use; and who decided it.
 */
export type OwnAnswer =
  | { kind: 'replayed'; from: 'redis' | 'memo' | 'postgres'; answer: DurableAnswer }
  | { kind: 'reused'; from: 'redis' | 'memo' | 'postgres' }
  | { kind: 'in_use'; from: 'redis' }

/** How a request under its key ended: its route ran (`result`), or the protocol answered. */
export type IdempotentOutcome<R> = { kind: 'ran'; result: R } | OwnAnswer

/** The route as the protocol sees it: run it, then read its answer. */
export interface IdempotentRoute<R> {
  /** The route's work, told how this request stands with its claim. A throw releases it. */
  run(hold: ClaimHold): Promise<R>
  status(result: R): number
  /** The route answered with an answer stored before (the origin's): it is not stored again. */
  replayed(result: R): boolean
  /** The answer's JSON body; read only when the answer is stored. */
  body(result: R): Promise<unknown>
}

/**
 * Runs `route` once per (tenant, route, key) of `call`. `durable` absent: the route's own work
 * stores and finds answers (the Worker's, through the origin).
 */
export async function runIdempotent<R>(
  call: IdempotentCall,
  store: ClaimStore | null,
  durable: DurableAnswers | null,
  route: IdempotentRoute<R>,
): Promise<IdempotentOutcome<R>> {
  const scope = await scopeKey(call)
  const runRoute = async (hold: ClaimHold): Promise<IdempotentOutcome<R>> => {
    const found = await durable?.find(call)
    if (found) {
      return found.fingerprint === call.fingerprint
        ? { kind: 'replayed', from: 'postgres', answer: found }
        : { kind: 'reused', from: 'postgres' }
    }
    return { kind: 'ran', result: await route.run(hold) }
  }
  const keep = async (outcome: IdempotentOutcome<R>) => {
    const answer = await answerOf(outcome, route)
    if (answer === null || !isStored(answer.status)) return
    await durable?.save(call, answer)
    await store
      ?.keep(
        answerKey(scope),
        JSON.stringify({ ...answer, fingerprint: call.fingerprint }),
        call.ttlSeconds,
      )
      .catch(() => {})
  }
  return runClaimed<IdempotentOutcome<R>>(
    store,
    { key: scope, hash: call.fingerprint, ttlSeconds: call.ttlSeconds },
    {
      async settled({ payloadMismatch, from }) {
        if (payloadMismatch) return { kind: 'reused', from }
        // `spooled` too: the queued message may have landed since, its answer kept by a retry.
        const stored = await keptAnswer(store, scope)
        if (stored?.fingerprint === call.fingerprint)
          return { kind: 'replayed', from, answer: stored }
        // Queued and not landed, or the stored answer gone: Postgres decides (via the route),
        // the route running beside a claim it does not hold (as after waiting out another's).
        const outcome = await runRoute({ redis: 'inflight' })
        if (!isReplay(outcome, route)) await keep(outcome)
        return outcome
      },
      inflight: () => ({ kind: 'in_use', from: 'redis' }),
      async run(hold) {
        const outcome = await runRoute(hold)
        const end = endOf(outcome, route)
        if (end === 'done') await keep(outcome)
        return { result: outcome, end }
      },
    },
  )
}

/** A final 2xx is the request's answer for good; a 202 says only "queued". */
const isStored = (status: number) => status >= 200 && status < 300 && status !== 202

/** How the claim ends with this outcome (module doc); another request's is never stored. */
function endOf<R>(outcome: IdempotentOutcome<R>, route: IdempotentRoute<R>): ClaimEnd {
  const status =
    outcome.kind === 'ran'
      ? route.status(outcome.result)
      : outcome.kind === 'replayed'
        ? outcome.answer.status
        : null
  if (status === 202) return 'spooled'
  return status !== null && isStored(status) ? 'done' : 'release'
}

const isReplay = <R>(outcome: IdempotentOutcome<R>, route: IdempotentRoute<R>) =>
  outcome.kind === 'replayed' || (outcome.kind === 'ran' && route.replayed(outcome.result))

/** The answer an outcome carries (status and body), null when it carries none of its own. */
async function answerOf<R>(
  outcome: IdempotentOutcome<R>,
  route: IdempotentRoute<R>,
): Promise<{ status: number; body: unknown } | null> {
  if (outcome.kind === 'replayed')
    return { status: outcome.answer.status, body: outcome.answer.body }
  if (outcome.kind !== 'ran') return null
  const status = route.status(outcome.result)
  return isStored(status) ? { status, body: await route.body(outcome.result) } : null
}

/** The claim's key: one per (tenant, route, key), none of them readable in Redis. */
async function scopeKey(call: IdempotentCall): Promise<string> {
  return `idem:${await sha256Hex(`${call.tenant}\n${call.route}\n${call.keyHash}`)}`
}

const answerKey = (scope: string) => `${scope}:answer`

async function keptAnswer(store: ClaimStore | null, scope: string): Promise<DurableAnswer | null> {
  const text = await store?.kept(answerKey(scope)).catch(() => null)
  if (!text) return null
  try {
    return JSON.parse(text) as DurableAnswer
  } catch {
    return null
  }
}
