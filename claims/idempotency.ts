/**
 * Idempotency-Key for our own POST routes (draft-ietf-httpapi-idempotency-key-header), as one Hono
 * middleware any route of either wing can take. It is the delivery claim's lifecycle
 * ({@link runClaimed}: claim → run → settle or release) under a request's scope, plus the stored
 * answer:
 * - scope: (tenant, route, key); the claim's hash is the request's fingerprint (method, path,
 *   canonical body), so the same key with another request is seen in Redis (422);
 * - first request: the route runs; a final 2xx is stored (Redis beside the claim, and Postgres:
 *   the route's own work, or `durable`), the claim settles `done`;
 * - a 202 (queued, not landed yet) settles `spooled`: a retry runs again and gets the stored
 *   answer once the work has landed;
 * - a 4xx or 5xx (or a throw, a timeout) is not stored: the claim is released, a retry runs again;
 * - a repeat while the first runs: 409 with Retry-After; after it: the stored answer, with
 *   `Idempotent-Replayed: true`, nothing run;
 * - Redis down or its answer gone: the route runs unclaimed, and Postgres decides.
 * @module
 */
import type { Context, Env, MiddlewareHandler } from 'hono'
import { parseItem } from 'structured-headers'
import type { IdempotentRequest, StoredAnswer } from '../contract/idempotency'
import { PROBLEM_CONTENT_TYPE, problemResponse } from '../contract/problem'
import { BodyOverLimitError, readBoundedBody } from '../shared/body'
import { sha256Hex } from '../shared/crypto'
import { type ClaimEnd, type ClaimHold, runClaimed } from './run-claimed'
import type { ClaimStore } from './store'

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key'
export const REPLAYED_HEADER = 'Idempotent-Replayed'
/** Stripe's bound, and the issue's: 1 to 255 characters. */
export const MAX_KEY_CHARS = 255
/** What a client is told to wait before trying a key that is in flight again. */
export const RETRY_AFTER_SECONDS = 1

/**
 * A bare key (Stripe's convention: no quotes): the characters a client puts in one, never those
 * that structure a field (`"`, `,`, `;`, `\`, spaces).
 */
const BARE_KEY = /^[A-Za-z0-9!#$%&'*+.^_`|~:/=@?-]+$/

export type KeyVerdict =
  | { ok: true; key: string }
  | { ok: false; code: 'idempotency_key_missing' | 'idempotency_key_malformed' }

/**
 * The header's key: a Structured Field string (`"8e03…"`, RFC 9651, parameters refused), or the
 * same characters bare. Two field lines arrive joined by a comma, which neither form allows.
 */
export function parseIdempotencyKey(header: string | null | undefined): KeyVerdict {
  const value = header?.trim() ?? ''
  if (value === '') return { ok: false, code: 'idempotency_key_missing' }
  const key = value.startsWith('"') ? sfString(value) : BARE_KEY.test(value) ? value : null
  if (key === null || key.length === 0 || key.length > MAX_KEY_CHARS) {
    return { ok: false, code: 'idempotency_key_malformed' }
  }
  return { ok: true, key }
}

function sfString(value: string): string | null {
  try {
    const [item, parameters] = parseItem(value)
    return typeof item === 'string' && parameters.size === 0 ? item : null
  } catch {
    return null
  }
}

/** JSON with every object's keys sorted: key order and whitespace are no other request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, item]) => `${JSON.stringify(k)}:${canonicalJson(item)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** SHA-256 of method, path and canonical body (the raw text when it is no JSON). */
export async function requestFingerprint(
  method: string,
  path: string,
  body: string,
): Promise<string> {
  let canonical = body
  try {
    canonical = canonicalJson(JSON.parse(body))
  } catch {
    // Not JSON: its bytes are the request.
  }
  return sha256Hex(`${method.toUpperCase()} ${path}\n${canonical}`)
}

/** What the route reads of its request once the middleware has let it run. */
export interface IdempotentCall extends IdempotentRequest {
  tenant: string
  /** The client's key as sent (unquoted). */
  key: string
  /** The body the fingerprint was taken over (bounded), for the route to parse. */
  body: string
}

/**
 * `idempotencyHold`: how this request stands with its claim while the route runs (the claim is
 * the middleware's: a route that claims in Redis itself must not claim the same request again).
 */
export type IdempotencyVariables = { idempotency: IdempotentCall; idempotencyHold: ClaimHold }

/**
 * What the middleware answered itself, the route not run: a stored answer replayed, another
 * request under the key (422), or the key in use (409); and who decided it.
 */
export type OwnAnswer =
  | { kind: 'replayed' | 'reused'; from: 'redis' | 'memo' | 'postgres' }
  | { kind: 'in_use'; from: 'redis' }

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

export interface IdempotencyOptions<E extends Env> {
  /** Method and path of the scope: `POST /v1/messages`. */
  route: string
  /** The caller's tenant, as the route's authentication (run before this) found it. */
  tenant(c: Context<E>): string
  claims(c: Context<E>): ClaimStore | null
  ttlSeconds(c: Context<E>): number
  maxBodyBytes(c: Context<E>): number
  /** Absent: the route's own work stores and finds answers (the Worker's, through the origin). */
  durable?(c: Context<E>): DurableAnswers
  /** Told of each answer the middleware gives itself (for the route's log and counts). */
  answered?(c: Context<E>, own: OwnAnswer, response: Response): void
}

/** The middleware; the route finds its call under `c.get('idempotency')`. */
export function idempotency<E extends Env & { Variables: IdempotencyVariables }>(
  options: IdempotencyOptions<E>,
): MiddlewareHandler<E> {
  return async (c, next) => {
    const verdict = parseIdempotencyKey(c.req.header(IDEMPOTENCY_KEY_HEADER))
    if (!verdict.ok) return problemResponse(verdict.code)
    const body = await boundedBody(c.req.raw, options.maxBodyBytes(c))
    if (body === null) return problemResponse('body_too_large')
    const call = await idempotentCall(c, options, verdict.key, body)
    c.set('idempotency', call)
    const durable = options.durable?.(c) ?? null
    const store = options.claims(c)
    const scope = await scopeKey(call)
    const own = (answer: OwnAnswer, response: Response): Response => {
      options.answered?.(c, answer, response)
      return response
    }
    const runRoute = async (hold: ClaimHold): Promise<Response> => {
      const found = await durable?.find(call)
      if (found) {
        return found.fingerprint === call.fingerprint
          ? own({ kind: 'replayed', from: 'postgres' }, replay(found))
          : own({ kind: 'reused', from: 'postgres' }, reused())
      }
      c.set('idempotencyHold', hold)
      await next()
      return c.res
    }
    const keep = async (response: Response) => {
      if (!isStored(response.status)) return
      const answer = { status: response.status, body: await response.clone().json() }
      await durable?.save(call, answer)
      await store
        ?.keep(
          answerKey(scope),
          JSON.stringify({ ...answer, fingerprint: call.fingerprint }),
          call.ttlSeconds,
        )
        .catch(() => {})
    }
    const answer = await runClaimed<Response>(
      store,
      { key: scope, hash: call.fingerprint, ttlSeconds: call.ttlSeconds },
      {
        async settled({ payloadMismatch, from }) {
          if (payloadMismatch) return own({ kind: 'reused', from }, reused())
          // `spooled` too: the queued message may have landed since, its answer kept by a retry.
          const stored = await keptAnswer(store, scope)
          if (stored?.fingerprint === call.fingerprint) {
            return own({ kind: 'replayed', from }, replay(stored))
          }
          // Queued and not landed, or the stored answer gone: Postgres decides (via the route),
          // the route running beside a claim it does not hold (as after waiting out another's).
          const response = await runRoute({ redis: 'inflight' })
          if (!isReplayed(response)) await keep(response)
          return response
        },
        inflight: () =>
          own(
            { kind: 'in_use', from: 'redis' },
            problemResponse('idempotency_key_in_use', undefined, {
              'retry-after': String(RETRY_AFTER_SECONDS),
            }),
          ),
        async run(hold) {
          const response = await runRoute(hold)
          const end = endOf(response.status)
          if (end === 'done') await keep(response)
          return { result: response, end }
        },
      },
    )
    if (answer !== c.res) c.res = answer
  }
}

/** A final 2xx is the request's answer for good; a 202 says only "queued". */
const isStored = (status: number) => status >= 200 && status < 300 && status !== 202

/** How the claim ends with this answer (module doc). */
function endOf(status: number): ClaimEnd {
  if (status === 202) return 'spooled'
  return isStored(status) ? 'done' : 'release'
}

const isReplayed = (response: Response) => response.headers.get(REPLAYED_HEADER) === 'true'

async function idempotentCall<E extends Env>(
  c: Context<E>,
  options: IdempotencyOptions<E>,
  key: string,
  body: string,
): Promise<IdempotentCall> {
  const path = new URL(c.req.url).pathname
  return {
    tenant: options.tenant(c),
    route: options.route,
    key,
    keyHash: await sha256Hex(key),
    fingerprint: await requestFingerprint(c.req.method, path, body),
    ttlSeconds: options.ttlSeconds(c),
    body,
  }
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

async function boundedBody(request: Request, maxBytes: number): Promise<string | null> {
  try {
    return (await readBoundedBody(request, maxBytes)).text
  } catch (err) {
    if (err instanceof BodyOverLimitError) return null
    throw err
  }
}

/** A stored answer as it was stored; marked `Idempotent-Replayed` when an earlier request ran. */
export function answerResponse(answer: StoredAnswer): Response {
  return new Response(JSON.stringify(answer.body), {
    status: answer.status,
    headers: {
      'content-type': answer.status >= 400 ? PROBLEM_CONTENT_TYPE : 'application/json',
      ...(answer.replayed ? { [REPLAYED_HEADER]: 'true' } : {}),
    },
  })
}

/** The stored answer again: nothing ran. */
const replay = (answer: DurableAnswer) => answerResponse({ ...answer, replayed: true })

const reused = () => problemResponse('idempotency_key_reused')
