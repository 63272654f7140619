/**
 * The production {@link KvPublisher}: Cloudflare's REST bulk endpoints,
 * `PUT /accounts/{account}/storage/kv/namespaces/{namespace}/bulk` (up to 10,000 pairs and 100 MB) and
 * `POST …/bulk/delete` (up to 10,000 keys), with a token that holds Workers KV Storage Write only.
 * Keys the answer lists in `unsuccessful_keys` are sent again; a 429 waits its `Retry-After`
 * (bounded), a 5xx or a network failure backs off; every call has a timeout. Errors name the
 * status and counts, never the token or a value. docs/connections.md says why this and not a
 * write route on the Worker.
 * @module
 */
import { backoffMs } from '../../shared/backoff'
import type { KvPair, KvPublisher } from './kv'
import type { KvRestConfig } from './settings'

export interface KvRestOptions {
  /** @default 10_000 ms per call */
  timeoutMs?: number
  /** Calls per batch before giving up (the outbox keeps the rows for the next pass). @default 5 */
  attempts?: number
  /** The longest Retry-After honoured; a longer one gives up for this pass. @default 60_000 ms */
  maxWaitMs?: number
  /** @default setTimeout */
  sleep?: (ms: number) => Promise<void>
  /** A request body's bound in bytes (Cloudflare's is 100 MB). @default {@link BULK_MAX_BYTES} */
  maxBytes?: number
}

/** Cloudflare's bound per bulk request. */
export const BULK_MAX = 10_000
/** Under Cloudflare's 100 MB per request: 10,000 records of up to 128 KiB would be 1.3 GB. */
export const BULK_MAX_BYTES = 90 * 1024 * 1024
const BACKOFF = { baseMs: 500, maxMs: 10_000 }

export class KvWriteError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'KvWriteError'
  }
}

export function restPublisher(config: KvRestConfig, options: KvRestOptions = {}): KvPublisher {
  const base = `${config.baseUrl}/accounts/${encodeURIComponent(config.accountId)}/storage/kv/namespaces/${encodeURIComponent(config.namespaceId)}`
  const send = (path: string, method: string, body: unknown[]) =>
    bulk(config.apiToken, `${base}${path}`, method, body, options)
  return {
    async put(pairs) {
      for (const chunk of chunks(pairs, options.maxBytes ?? BULK_MAX_BYTES)) {
        await retrying(
          chunk,
          (p) => p.key,
          (left) => send('/bulk', 'PUT', left),
          options,
        )
      }
    },
    async delete(keys) {
      for (const chunk of chunks(keys, options.maxBytes ?? BULK_MAX_BYTES)) {
        await retrying(
          chunk,
          (k) => k,
          (left) => send('/bulk/delete', 'POST', left),
          options,
        )
      }
    },
  }
}

/** `items` in runs of at most {@link BULK_MAX} whose JSON body stays within `maxBytes`. */
export function chunks<T>(items: readonly T[], maxBytes: number): T[][] {
  const out: T[][] = []
  let run: T[] = []
  let bytes = 2
  for (const item of items) {
    // An item's share of the array body: its JSON and a comma.
    const size = Buffer.byteLength(JSON.stringify(item)) + 1
    if (run.length > 0 && (run.length >= BULK_MAX || bytes + size > maxBytes)) {
      out.push(run)
      run = []
      bytes = 2
    }
    run.push(item)
    bytes += size
  }
  if (run.length > 0) out.push(run)
  return out
}

type Outcome =
  | { ok: true; unsuccessful: string[] }
  | { ok: false; waitMs: number | null; why: string }

/** Sends `items` until none is left unwritten, within the attempts. */
async function retrying<T extends KvPair | string>(
  items: readonly T[],
  keyOf: (item: T) => string,
  call: (items: T[]) => Promise<Outcome>,
  options: KvRestOptions,
): Promise<void> {
  const attempts = options.attempts ?? 5
  const sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)))
  let left = [...items]
  let why = ''
  let wait: number | null = null
  for (let attempt = 0; attempt < attempts && left.length > 0; attempt++) {
    // After a failure: its Retry-After (0: at once), else backoff; an answer naming unsuccessful
    // keys sets no wait, so they are sent again after the backoff too.
    if (attempt > 0 && wait !== 0) await sleep(wait ?? backoffMs(BACKOFF, attempt))
    const outcome = await call(left)
    if (outcome.ok) {
      const failed = new Set(outcome.unsuccessful)
      left = left.filter((item) => failed.has(keyOf(item)))
      why = `${left.length} keys unsuccessful`
      wait = null
    } else {
      why = outcome.why
      if (outcome.waitMs !== null && outcome.waitMs > (options.maxWaitMs ?? 60_000)) break
      wait = outcome.waitMs
    }
  }
  if (left.length > 0)
    throw new KvWriteError(`KV bulk write: ${left.length} of ${items.length} not written (${why})`)
}

async function bulk(
  token: string,
  url: string,
  method: string,
  body: unknown[],
  options: KvRestOptions,
): Promise<Outcome> {
  let response: Response
  try {
    response = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    })
  } catch (err) {
    const name = err instanceof Error ? err.name : 'error'
    return { ok: false, waitMs: null, why: `no answer (${name})` }
  }
  const text = await response.text().catch(() => '')
  if (response.status === 429) {
    return { ok: false, waitMs: retryAfterMs(response.headers.get('retry-after')), why: '429' }
  }
  if (!response.ok) return { ok: false, waitMs: null, why: `HTTP ${response.status}` }
  const result = parseResult(text)
  if (!result) return { ok: false, waitMs: null, why: 'an answer without success' }
  return { ok: true, unsuccessful: result }
}

/** `result.unsuccessful_keys` of a successful answer (none: []); null when it is no success. */
function parseResult(text: string): string[] | null {
  try {
    const answer = JSON.parse(text) as {
      success?: boolean
      result?: { unsuccessful_keys?: unknown }
    }
    if (answer.success !== true) return null
    const keys = answer.result?.unsuccessful_keys
    return Array.isArray(keys) ? keys.filter((k): k is string => typeof k === 'string') : []
  } catch {
    return null
  }
}

/** Retry-After as seconds or an HTTP date; absent or unreadable: 1 s. */
function retryAfterMs(value: string | null): number {
  if (value && /^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  const at = value ? Date.parse(value) : Number.NaN
  return Number.isNaN(at) ? 1000 : Math.max(0, at - Date.now())
}
