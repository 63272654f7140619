/**
 * HTTP for the Gmail poller: every call has a timeout and a bounded response size, and a call
 * that failed in a way worth repeating (network error, timeout, 429, 5xx) is repeated on the
 * system's one retry schedule (shared/backoff.ts: exponential, equal jitter, so pods that failed
 * together do not retry together). A `Retry-After` from Google (seconds) is honoured up to the
 * cap. Anything else is a {@link GmailHttpError} at once.
 * @module
 */
import { type Backoff, backoffMs } from '../../shared/backoff'
import { BodyOverLimitError, readBoundedBody } from '../../shared/body'
import { isRedirect, NO_REDIRECT } from '../../shared/no-redirect'

/** The shared schedule (`baseMs` doubling up to `maxMs`, Retry-After included), and a bound. */
export interface RetryPolicy extends Backoff {
  /** Attempts in all, the first included. @default 5 */
  attempts: number
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseMs: 500, maxMs: 30_000 }

export type RetryReason = 'rate_limited' | 'server_error' | 'network' | 'timeout'

export interface HttpOptions {
  /** Bound on one attempt, response body included. @default 10000 */
  timeoutMs: number
  retry: RetryPolicy
  /** Aborts waits and requests when the poller stops. */
  signal?: AbortSignal
  /** Told about every retry (metrics). */
  onRetry?: (reason: RetryReason, attempt: number, delayMs: number) => void
  /** Injectable for tests. @default Math.random */
  random?: () => number
}

/** A Gmail or OAuth answer that is final for this call. */
export class GmailHttpError extends Error {
  constructor(
    /** The last HTTP status; null when there was no answer (network error, timeout). */
    readonly status: number | null,
    /** Google's `error.status` / OAuth `error` code when the body had one (never a secret). */
    readonly reason: string,
    /** The endpoint's name (`history.list`, `token`, ...), not its URL. */
    readonly endpoint: string,
    /** True when every attempt failed in a way worth retrying (429, 5xx, network, timeout). */
    readonly exhausted = false,
  ) {
    super(`${endpoint}: ${status ?? 'no answer'} ${reason}`)
    this.name = 'GmailHttpError'
  }
}

/** The answer's body was over the caller's bound: the same bytes will be too large next time. */
export class AnswerTooLargeError extends GmailHttpError {
  constructor(
    status: number,
    endpoint: string,
    readonly maxBytes: number,
  ) {
    super(status, 'answer_too_large', endpoint)
    this.name = 'AnswerTooLargeError'
  }
}

export class StoppedError extends Error {
  constructor() {
    super('the poller is stopping')
    this.name = 'StoppedError'
  }
}

export interface JsonAnswer {
  status: number
  body: Record<string, unknown>
}

/**
 * Sends `request()` (a fresh Request per attempt: bodies are single-use) until it gets an answer
 * that is not worth repeating, and returns it with its JSON body. 4xx other than 429 are
 * returned, not thrown: 401 and 404 mean something to the caller.
 */
export async function requestJson(
  endpoint: string,
  request: () => Promise<RequestInit & { url: string }>,
  options: HttpOptions,
  maxBytes: number,
): Promise<JsonAnswer> {
  const random = options.random ?? Math.random
  for (let attempt = 0; ; attempt++) {
    let retry: { reason: RetryReason; retryAfterMs: number | null }
    let status: number | null = null
    if (options.signal?.aborted) throw new StoppedError()
    try {
      const { url, ...init } = await request()
      const signals = [AbortSignal.timeout(options.timeoutMs)]
      if (options.signal) signals.push(options.signal)
      const response = await fetch(url, {
        ...init,
        signal: AbortSignal.any(signals),
        ...NO_REDIRECT,
      })
      status = response.status
      if (isRedirect(status)) {
        // Google's APIs do not redirect: something in between does, and will again.
        await response.body?.cancel().catch(() => {})
        throw new GmailHttpError(status, 'redirect', endpoint)
      }
      const body = await readJson(response, maxBytes, endpoint)
      if (response.status !== 429 && response.status < 500) return { status, body }
      retry = {
        reason: response.status === 429 ? 'rate_limited' : 'server_error',
        retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
      }
    } catch (err) {
      if (options.signal?.aborted) throw new StoppedError()
      if (err instanceof GmailHttpError) throw err
      const timedOut = err instanceof Error && err.name === 'TimeoutError'
      retry = { reason: timedOut ? 'timeout' : 'network', retryAfterMs: null }
    }
    if (attempt + 1 >= options.retry.attempts) {
      const reason = `${retry.reason} after ${attempt + 1} attempts`
      throw new GmailHttpError(status, reason, endpoint, true)
    }
    const jittered = backoffMs(options.retry, attempt + 1, random())
    const delay = Math.min(options.retry.maxMs, Math.max(jittered, retry.retryAfterMs ?? 0))
    options.onRetry?.(retry.reason, attempt + 1, delay)
    await sleep(delay, options.signal)
  }
}

/** Google's error reason from `{error: {status}}` (API) or `{error: "invalid_grant"}` (OAuth). */
export function errorReason(body: Record<string, unknown>): string {
  const error = body.error
  if (typeof error === 'string') return error.slice(0, 64)
  if (error && typeof error === 'object') {
    const status = (error as { status?: unknown }).status
    if (typeof status === 'string') return status.slice(0, 64)
  }
  return 'unknown'
}

function retryAfterMs(header: string | null): number | null {
  if (!header || !/^\d{1,6}$/.test(header.trim())) return null
  return Number(header.trim()) * 1000
}

/** Reads at most `maxBytes` (shared/body.ts); a body that is not a JSON object reads as `{}`. */
async function readJson(
  response: Response,
  maxBytes: number,
  endpoint: string,
): Promise<Record<string, unknown>> {
  let text: string
  try {
    text = (await readBoundedBody(response, maxBytes)).text
  } catch (err) {
    if (err instanceof BodyOverLimitError) {
      throw new AnswerTooLargeError(response.status, endpoint, maxBytes)
    }
    throw err
  }
  try {
    const parsed: unknown = JSON.parse(text)
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {}
  } catch {
    return {}
  }
}

/** Resolves after `ms`, or rejects with {@link StoppedError} as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new StoppedError())
    const onAbort = () => {
      clearTimeout(timer)
      reject(new StoppedError())
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
