/**
 * {@link RedisPort} over Upstash's REST API: one `fetch` per command, `POST {url}` with the
 * command as a JSON array and the bearer token, the reply `{"result": …}` or `{"error": "…"}`
 * (https://upstash.com/docs/redis/features/restapi); several in one `POST {url}/pipeline`, each
 * answered on its own (its "Pipelining" section). Runs in workerd and in Node alike (the Worker
 * and the origin's Gmail poller use this one).
 *
 * Not `@upstash/redis`: a profile of the duplicate path put its command objects, header merging
 * and base64 reply decoding near a quarter of a replay, but before/after bench runs did not
 * measure a gain (docs/benchmark.md, per lever). It is kept for its bounds and for having nothing
 * between the command and the fetch: one attempt, no retries, a fresh `AbortSignal.timeout` per
 * call, a reply of at most {@link MAX_REPLY_BYTES}. Our values are short ASCII strings, so the
 * plain JSON reply is exact.
 * @module
 */
import { readBoundedBody } from '../../shared/body'
import { isRedirect, NO_REDIRECT } from '../../shared/no-redirect'
import type { PipelineReply, RedisCommand, RedisPort } from '../port'
import type { RedisConfig } from '../settings'

/** Redis answered with an error reply (e.g. `ERR syntax error`), or the REST layer refused. */
export class UpstashReplyError extends Error {
  readonly code = 'redis_error'
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message)
    this.name = 'UpstashReplyError'
  }
}

type Arg = string | number

/**
 * Our commands' replies are a value of ours, OK, a number or an error line: tens of bytes. A larger
 * reply is not Upstash answering these commands, and is not read past this.
 */
export const MAX_REPLY_BYTES = 64 * 1024

function isSyntaxError(err: unknown): boolean {
  return err instanceof UpstashReplyError && /syntax error/i.test(err.message)
}

export function upstashPort(config: RedisConfig, timeoutMs: number): RedisPort {
  const url = config.url.replace(/\/+$/, '')
  const headers = { authorization: `Bearer ${config.token}`, 'content-type': 'application/json' }

  /** One POST to `path` (`''` a command, `/pipeline` several), its JSON reply read bounded. */
  async function post(path: string, body: unknown): Promise<{ response: Response; json: unknown }> {
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
      // A 3xx is not Upstash's reply: followed, it would turn the POST into another request.
      ...NO_REDIRECT,
    })
    if (isRedirect(response.status)) {
      await response.body?.cancel().catch(() => {})
      throw new UpstashReplyError(
        `HTTP ${response.status}, a redirect (not followed)`,
        response.status,
      )
    }
    const { text } = await readBoundedBody(response, MAX_REPLY_BYTES)
    try {
      return { response, json: JSON.parse(text) }
    } catch {
      throw new UpstashReplyError(`HTTP ${response.status}, not a JSON reply`, response.status)
    }
  }

  async function call<T>(...command: Arg[]): Promise<T> {
    const { response, json } = await post('', command)
    const reply = json as { result?: T; error?: string }
    if (typeof reply.error === 'string' || !response.ok) {
      // The error text is Redis's own (no key or value in it); never the command.
      throw new UpstashReplyError(String(reply.error ?? `HTTP ${response.status}`), response.status)
    }
    return reply.result as T
  }

  // Redis < 7 rejects NX together with GET; then claim with two calls (SET NX, then GET). The
  // second call leaves a window where the key can vanish; the caller treats that as inflight.
  let nxGetSupported = true

  async function setNxGetWith(
    key: string,
    value: string,
    expiry: ['PX' | 'EX', number],
  ): Promise<string | null> {
    if (nxGetSupported) {
      try {
        return await call<string | null>('SET', key, value, 'NX', ...expiry, 'GET')
      } catch (err) {
        if (!isSyntaxError(err)) throw err
        nxGetSupported = false
      }
    }
    const set = await call<string | null>('SET', key, value, 'NX', ...expiry)
    if (set === 'OK') return null
    return (await call<string | null>('GET', key)) ?? ''
  }

  return {
    setNxGet: (key, value, pxMs) => setNxGetWith(key, value, ['PX', pxMs]),
    setNxGetEx: (key, value, exSeconds) => setNxGetWith(key, value, ['EX', exSeconds]),
    evalScript: (script, keys, args) => call('EVAL', script, keys.length, ...keys, ...args),
    hincrby: (key, field, by) => call<number>('HINCRBY', key, field, by),
    async pipeline(commands: readonly RedisCommand[]): Promise<PipelineReply[]> {
      if (commands.length === 0) return []
      const { response, json: replies } = await post('/pipeline', commands)
      if (!response.ok || !Array.isArray(replies) || replies.length !== commands.length) {
        const error = (replies as { error?: unknown } | null)?.error
        throw new UpstashReplyError(String(error ?? `HTTP ${response.status}`), response.status)
      }
      return replies.map((reply: { result?: unknown; error?: unknown }) =>
        typeof reply?.error === 'string' ? { error: reply.error } : { result: reply?.result },
      )
    },
    async ping() {
      await call('PING')
    },
  }
}
