/**
 * A stand-in for Google's OAuth token endpoint and the Gmail API (one mailbox), for the poller's
 * tests: a real Node HTTP server on 127.0.0.1, port 0, that follows the documented shapes
 * (vendor-protocols.md §5):
 * - `POST /token`, form body, `grant_type=refresh_token` with the client id, secret and refresh
 *   token it was given → `{access_token, expires_in, scope, token_type: 'Bearer'}`; anything else
 *   → 400 `{error: 'invalid_grant'}`.
 * - Every `/gmail/v1/users/me/...` call needs `Authorization: Bearer <a token it issued and has not
 *   revoked>`, else 401 `{error: {code: 401, status: 'UNAUTHENTICATED'}}`.
 * - `GET profile` → `{emailAddress, messagesTotal, threadsTotal, historyId}`.
 * - `GET history?startHistoryId&historyTypes&pageToken&maxResults` → `{history: [{id, messages,
 *   messagesAdded: [{message: {id, threadId, labelIds}}]}], nextPageToken?, historyId}`; records
 *   after startHistoryId only; 404 when startHistoryId is older than the history kept.
 * - `GET messages?labelIds&pageToken&maxResults` → `{messages: [{id, threadId}], nextPageToken?,
 *   resultSizeEstimate}`, newest first.
 * - `GET messages/{id}?format=raw` → `{id, threadId, labelIds, snippet, historyId, internalDate,
 *   sizeEstimate, raw}` with `raw` base64url without padding; 404 for an unknown id.
 * History ids grow with random gaps, like Gmail's. Faults can be queued per endpoint, and one
 * message can be broken (an error status, no `raw`, an oversized answer) until it is repaired.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readBody } from '../../local/http-body'

export type Endpoint = 'token' | 'profile' | 'history' | 'messages.list' | 'messages.get'

export interface FakeGmailOptions {
  mailbox: string
  clientId?: string
  clientSecret?: string
  refreshToken?: string
  /** `expires_in` of issued tokens, seconds. @default 3599 */
  tokenLifetimeSeconds?: number
  /** Pages never hold more than this, whatever `maxResults` asks (Gmail may send fewer). @default 500 */
  maxPageSize?: number
}

export interface StoredMessage {
  id: string
  threadId: string
  labelIds: string[]
  historyId: string
  raw: string
}

export interface Fault {
  status: number
  /** `Retry-After` header (seconds). */
  retryAfter?: number
  /** Only when a `pageToken` is present (a fault on a later page). */
  laterPagesOnly?: boolean
}

/** What messages.get answers for one message instead of it, until it is repaired. */
export type MessageFault =
  /** An error answer with this status (404, 400, 403, 503, ...), every time. */
  | { kind: 'status'; status: number }
  /** 200 with the message's metadata but no `raw` field. */
  | { kind: 'no_raw' }
  /** 200 with the message, padded by an extra field to at least `bytes` (over a size bound). */
  | { kind: 'oversize'; bytes: number }

export interface RequestRecord {
  endpoint: Endpoint
  status: number
  /** messages.get: the id asked for. */
  messageId?: string
  /** The query parameters as received. */
  query: Record<string, string>
  /** The bearer token used (API calls). */
  token?: string
  at: number
}

export interface FakeGmail {
  url: string
  /** What the poller needs: GMAIL_* values pointing at this server. */
  env: Record<string, string>
  clientId: string
  clientSecret: string
  refreshToken: string
  /** Adds a message (a `messageAdded` history record); returns its id and historyId. */
  deliver(raw: string, labelIds?: string[]): StoredMessage
  /** Forgets history up to the current historyId: older startHistoryIds get 404. */
  expireHistory(): void
  /** Queues faults: the next `count` calls to `endpoint` answer `fault` instead. */
  fail(endpoint: Endpoint, fault: Fault, count?: number): void
  /** Drops every queued fault. */
  clearFaults(): void
  /** messages.get for `id` answers `fault` from now on (other messages are unaffected). */
  breakMessage(id: string, fault: MessageFault): void
  /** messages.get for `id` answers the message again. */
  repairMessage(id: string): void
  /** Every token issued so far stops working (401 on the API). */
  revokeAccessTokens(): void
  /** Delay every answer (ms). */
  setLatency(ms: number): void
  requests(endpoint?: Endpoint): RequestRecord[]
  currentHistoryId(): string
  close(): Promise<void>
}

/** Google's `error.status` for an HTTP status, as the API sends it. */
function statusName(status: number): string {
  const names: Record<number, string> = {
    400: 'INVALID_ARGUMENT',
    403: 'PERMISSION_DENIED',
    404: 'NOT_FOUND',
    429: 'RESOURCE_EXHAUSTED',
  }
  return names[status] ?? (status >= 500 ? 'UNAVAILABLE' : 'FAILED_PRECONDITION')
}

export async function startFakeGmail(options: FakeGmailOptions): Promise<FakeGmail> {
  const clientId = options.clientId ?? `client-${randomBytes(4).toString('hex')}`
  const clientSecret = options.clientSecret ?? `secret-${randomBytes(8).toString('hex')}`
  const refreshToken = options.refreshToken ?? `1//refresh-${randomBytes(8).toString('hex')}`
  const lifetime = options.tokenLifetimeSeconds ?? 3599

  let historyId = 1000 + Math.floor(Math.random() * 1000)
  /** History kept: records after this id can be listed; older start ids get 404. */
  let historyFloor = historyId
  const messages: StoredMessage[] = []
  const records: Array<{ id: string; message: StoredMessage }> = []
  const validTokens = new Set<string>()
  const faults = new Map<Endpoint, Array<Fault>>()
  const brokenMessages = new Map<string, MessageFault>()
  const log: RequestRecord[] = []
  let latencyMs = 0

  const nextHistoryId = () => {
    historyId += 1 + Math.floor(Math.random() * 20)
    return String(historyId)
  }

  function send(res: ServerResponse, status: number, body: unknown, headers = {}): void {
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers })
    res.end(JSON.stringify(body))
  }

  function apiError(res: ServerResponse, code: number, status: string, message: string) {
    send(res, code, { error: { code, message, status, errors: [{ message, reason: status }] } })
  }

  function takeFault(endpoint: Endpoint, query: Record<string, string>): Fault | null {
    const queue = faults.get(endpoint)
    const fault = queue?.[0]
    if (!fault || (fault.laterPagesOnly && !query.pageToken)) return null
    queue.shift()
    return fault
  }

  function page<T>(items: T[], query: Record<string, string>, fallbackSize: number) {
    const size = Math.min(Number(query.maxResults) || fallbackSize, options.maxPageSize ?? 500)
    const offset = query.pageToken ? Number(Buffer.from(query.pageToken, 'base64url')) : 0
    const slice = items.slice(offset, offset + size)
    const next = offset + size < items.length ? offset + size : null
    return {
      slice,
      nextPageToken: next === null ? undefined : Buffer.from(String(next)).toString('base64url'),
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake-gmail')
    const query = Object.fromEntries(url.searchParams)
    const body = await readBody(req)
    if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs))

    if (url.pathname === '/token' && req.method === 'POST') {
      const record: RequestRecord = { endpoint: 'token', status: 200, query: {}, at: Date.now() }
      log.push(record)
      const fault = takeFault('token', {})
      if (fault) {
        record.status = fault.status
        return send(res, fault.status, { error: 'temporarily_unavailable' })
      }
      const form = new URLSearchParams(body)
      const good =
        (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded') &&
        form.get('grant_type') === 'refresh_token' &&
        form.get('client_id') === clientId &&
        form.get('client_secret') === clientSecret &&
        form.get('refresh_token') === refreshToken
      if (!good) {
        record.status = 400
        return send(res, 400, { error: 'invalid_grant', error_description: 'Bad Request' })
      }
      const token = `ya29.${randomBytes(12).toString('base64url')}`
      validTokens.add(token)
      return send(res, 200, {
        access_token: token,
        expires_in: lifetime,
        scope: 'https://www.googleapis.com/auth/gmail.readonly',
        token_type: 'Bearer',
      })
    }

    const match = /^\/gmail\/v1\/users\/me\/(profile|history|messages)(?:\/([^/]+))?$/.exec(
      url.pathname,
    )
    if (!match || req.method !== 'GET') return apiError(res, 404, 'NOT_FOUND', 'Not Found')
    const endpoint: Endpoint =
      match[1] === 'messages'
        ? match[2]
          ? 'messages.get'
          : 'messages.list'
        : (match[1] as Endpoint)
    const auth = req.headers.authorization ?? ''
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : ''
    const record: RequestRecord = { endpoint, status: 200, query, token, at: Date.now() }
    log.push(record)
    const answer = (status: number) => {
      record.status = status
    }
    if (!validTokens.has(token)) {
      answer(401)
      return apiError(
        res,
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token.',
      )
    }
    const fault = takeFault(endpoint, query)
    if (fault) {
      answer(fault.status)
      res.writeHead(fault.status, {
        'content-type': 'application/json; charset=UTF-8',
        ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}),
      })
      const status = fault.status === 429 ? 'RESOURCE_EXHAUSTED' : 'UNAVAILABLE'
      res.end(JSON.stringify({ error: { code: fault.status, message: status, status } }))
      return
    }

    switch (endpoint) {
      case 'profile':
        return send(res, 200, {
          emailAddress: options.mailbox,
          messagesTotal: messages.length,
          threadsTotal: messages.length,
          historyId: String(historyId),
        })
      case 'history': {
        const start = query.startHistoryId
        if (!start || !/^\d+$/.test(start)) {
          answer(400)
          return apiError(res, 400, 'INVALID_ARGUMENT', 'Invalid startHistoryId')
        }
        if (Number(start) < historyFloor) {
          answer(404)
          return apiError(res, 404, 'NOT_FOUND', 'Requested entity was not found.')
        }
        const types = url.searchParams.getAll('historyTypes')
        const wanted = records.filter(
          (r) =>
            Number(r.id) > Number(start) && (types.length === 0 || types.includes('messageAdded')),
        )
        const { slice, nextPageToken } = page(wanted, query, 100)
        return send(res, 200, {
          ...(slice.length > 0
            ? {
                history: slice.map((r) => ({
                  id: r.id,
                  messages: [{ id: r.message.id, threadId: r.message.threadId }],
                  messagesAdded: [
                    {
                      message: {
                        id: r.message.id,
                        threadId: r.message.threadId,
                        labelIds: r.message.labelIds,
                      },
                    },
                  ],
                })),
              }
            : {}),
          ...(nextPageToken ? { nextPageToken } : {}),
          historyId: String(historyId),
        })
      }
      case 'messages.list': {
        const label = query.labelIds
        const listed = messages
          .filter((m) => !label || m.labelIds.includes(label))
          .filter((m) => !m.labelIds.includes('SPAM') && !m.labelIds.includes('TRASH'))
          .reverse()
        const { slice, nextPageToken } = page(listed, query, 100)
        return send(res, 200, {
          ...(slice.length > 0
            ? { messages: slice.map((m) => ({ id: m.id, threadId: m.threadId })) }
            : {}),
          ...(nextPageToken ? { nextPageToken } : {}),
          resultSizeEstimate: listed.length,
        })
      }
      case 'messages.get': {
        const id = decodeURIComponent(match[2] ?? '')
        record.messageId = id
        const message = messages.find((m) => m.id === id)
        const broken = brokenMessages.get(id)
        if (broken?.kind === 'status') {
          answer(broken.status)
          return apiError(res, broken.status, statusName(broken.status), 'broken by the test')
        }
        if (!message) {
          answer(404)
          return apiError(res, 404, 'NOT_FOUND', 'Requested entity was not found.')
        }
        if (query.format !== 'raw') {
          answer(400)
          return apiError(res, 400, 'INVALID_ARGUMENT', 'this fake serves format=raw only')
        }
        const bytes = Buffer.from(message.raw, 'utf8')
        return send(res, 200, {
          id: message.id,
          threadId: message.threadId,
          labelIds: message.labelIds,
          snippet: '',
          historyId: message.historyId,
          internalDate: String(Date.now()),
          sizeEstimate: bytes.length,
          // Gmail's raw is base64url; Node's encoder leaves out the padding, as Gmail does.
          ...(broken?.kind === 'no_raw' ? {} : { raw: bytes.toString('base64url') }),
          ...(broken?.kind === 'oversize' ? { padding: 'x'.repeat(broken.bytes) } : {}),
        })
      }
      default:
        return apiError(res, 404, 'NOT_FOUND', 'Not Found')
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      if (!res.headersSent) send(res, 500, { error: { code: 500, message: err.message } })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  return {
    url,
    clientId,
    clientSecret,
    refreshToken,
    env: {
      GMAIL_CLIENT_ID: clientId,
      GMAIL_CLIENT_SECRET: clientSecret,
      GMAIL_REFRESH_TOKEN: refreshToken,
      GMAIL_MAILBOX: options.mailbox,
      GMAIL_OAUTH_TOKEN_URL: `${url}/token`,
      GMAIL_API_BASE_URL: url,
    },
    deliver(raw, labelIds = ['INBOX', 'UNREAD']) {
      const message: StoredMessage = {
        id: randomBytes(8).toString('hex'),
        threadId: randomBytes(8).toString('hex'),
        labelIds,
        historyId: nextHistoryId(),
        raw,
      }
      messages.push(message)
      records.push({ id: message.historyId, message })
      return message
    },
    expireHistory() {
      historyFloor = historyId
    },
    fail(endpoint, fault, count = 1) {
      const queue = faults.get(endpoint) ?? []
      for (let i = 0; i < count; i++) queue.push(fault)
      faults.set(endpoint, queue)
    },
    clearFaults() {
      faults.clear()
    },
    breakMessage(id, fault) {
      brokenMessages.set(id, fault)
    },
    repairMessage(id) {
      brokenMessages.delete(id)
    },
    revokeAccessTokens() {
      validTokens.clear()
    },
    setLatency(ms) {
      latencyMs = ms
    },
    requests: (endpoint) => log.filter((r) => !endpoint || r.endpoint === endpoint),
    currentHistoryId: () => String(historyId),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
