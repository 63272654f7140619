/**
 * The four Gmail API calls the poller makes (users.getProfile, users.history.list,
 * users.messages.list, users.messages.get format=raw), for the authorized user (`me`), with the
 * answers checked into small typed shapes. A 401 drops the access token and tries once more with
 * a fresh one; a 404 from history.list is {@link HistoryExpiredError} (the stored historyId is too
 * old: do a full sync).
 *
 * messages.get draws the line between "this one message is bad" and "Gmail is unavailable":
 * - **Gmail is unavailable** ({@link GmailHttpError}: the poll fails, stores nothing, and the next
 *   one tries again): no answer, a timeout, 429 or 5xx once the retries ran out, 401 even with a
 *   fresh token, 403 (Gmail's per-user rate limits and a missing scope answer 403 for every
 *   message), 408, and any failure of the OAuth token endpoint.
 * - **This message is bad** ({@link BadMessageError}: recorded in channel_failures and passed
 *   over): 404, any other 4xx, a 200 without a base64url `raw`, an answer over the size bound.
 *   The same poll just listed the history with the same token, so Gmail works; an answer about
 *   this id that is not worth repeating is about this id. Misjudging one costs a replay
 *   (`npm run failures -- replay`), never the message.
 * @module
 */
import type { InboundEvent } from '../../contract/event'
import {
  AnswerTooLargeError,
  errorReason,
  GmailHttpError,
  type HttpOptions,
  type JsonAnswer,
  requestJson,
} from './http'
import type { FailureReason } from './metrics'
import { AccessTokens, type OAuthClient } from './oauth'

export interface HistoryMessage {
  id: string
  /** Often present on `messagesAdded`; messages.get is the authority. */
  labelIds: string[] | null
}

export interface HistoryRecord {
  id: string
  /** Messages added by this record, in order (`messagesAdded[].message`). */
  added: HistoryMessage[]
}

export interface HistoryPage {
  records: HistoryRecord[]
  nextPageToken: string | null
  /** The mailbox's current historyId; stored once the last page is consumed. */
  historyId: string
}

export interface MessagesPage {
  ids: string[]
  nextPageToken: string | null
}

export interface RawMessage {
  id: string
  labelIds: string[]
  /** The RFC 822 bytes, base64url-decoded. */
  raw: Buffer
}

/**
 * One message that cannot be taken as it is while Gmail itself answers: trying it again on every
 * poll would stop the mailbox's history at it, so it is recorded for replay and passed over.
 */
export class BadMessageError extends Error {
  constructor(
    readonly reason: FailureReason,
    /** For the log and the failure row: statuses and codes, never the message's content. */
    readonly detail: string,
    /** The parsed event, when it was the database that refused it. */
    readonly event: InboundEvent | null = null,
  ) {
    super(`${reason}: ${detail}`)
    this.name = 'BadMessageError'
  }
}

export class HistoryExpiredError extends Error {
  constructor() {
    super('history.list: startHistoryId is too old (404): full sync needed')
    this.name = 'HistoryExpiredError'
  }
}

/** Answers are bounded: listing pages are small; a raw message is at most ~34 MiB (25 MiB, base64). */
const MAX_LIST_BYTES = 8 * 1024 * 1024
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024
/** messages.get answers that mean Gmail (or our access to it), not this message, is the problem. */
const UNAVAILABLE_STATUSES = new Set([401, 403, 408, 429])
/** Gmail's `raw`: base64url, padded or not (Node's decoder would skip anything else silently). */
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/
/** Gmail's maximum page size for history.list (its default is 100). */
const HISTORY_PAGE_SIZE = 500
const MESSAGES_PAGE_SIZE = 100
const HISTORY_ID = /^\d{1,20}$/
const MESSAGE_ID = /^[A-Za-z0-9_-]{1,128}$/

export class GmailApi {
  constructor(
    private readonly baseUrl: string,
    private readonly tokens: AccessTokens,
    private readonly http: HttpOptions,
    /** Bound on one messages.get answer. @default {@link MAX_MESSAGE_BYTES} */
    private readonly maxMessageBytes = MAX_MESSAGE_BYTES,
  ) {}

  async profile(): Promise<{ historyId: string }> {
    const body = await this.ok('users.getProfile', this.url('profile'), MAX_LIST_BYTES)
    return { historyId: historyId(body.historyId, 'users.getProfile') }
  }

  async history(startHistoryId: string, pageToken: string | null): Promise<HistoryPage> {
    const url = this.url('history', {
      startHistoryId,
      historyTypes: 'messageAdded',
      maxResults: String(HISTORY_PAGE_SIZE),
      ...(pageToken ? { pageToken } : {}),
    })
    const answer = await this.get('history.list', url, MAX_LIST_BYTES)
    if (answer.status === 404) throw new HistoryExpiredError()
    const body = okBody(answer, 'history.list')
    const records = arrayOf(body.history).map((record): HistoryRecord => {
      const added = arrayOf(record.messagesAdded)
        .map((entry) => asObject(entry.message))
        .filter((message) => typeof message.id === 'string' && MESSAGE_ID.test(message.id))
        .map((message) => ({ id: message.id as string, labelIds: stringsOrNull(message.labelIds) }))
      return { id: historyId(record.id, 'history.list'), added }
    })
    return {
      records,
      nextPageToken: pageTokenOf(body.nextPageToken),
      historyId: historyId(body.historyId, 'history.list'),
    }
  }

  /** One page of the mailbox's messages, newest first (optionally only those with `labelId`). */
  async messages(pageToken: string | null, labelId?: string): Promise<MessagesPage> {
    const url = this.url('messages', {
      maxResults: String(MESSAGES_PAGE_SIZE),
      ...(labelId ? { labelIds: labelId } : {}),
      ...(pageToken ? { pageToken } : {}),
    })
    const body = await this.ok('messages.list', url, MAX_LIST_BYTES)
    const ids = arrayOf(body.messages)
      .map((message) => message.id)
      .filter((id): id is string => typeof id === 'string' && MESSAGE_ID.test(id))
    return { ids, nextPageToken: pageTokenOf(body.nextPageToken) }
  }

  /**
   * The message as RFC 822 bytes.
   * @throws {BadMessageError} when this message cannot be had; {@link GmailHttpError} when Gmail
   * cannot be reached or refuses us (see the module's comment for the line).
   */
  async rawMessage(id: string): Promise<RawMessage> {
    const url = this.url(`messages/${encodeURIComponent(id)}`, { format: 'raw' })
    let answer: JsonAnswer
    try {
      answer = await this.get('messages.get', url, this.maxMessageBytes)
    } catch (err) {
      if (!(err instanceof AnswerTooLargeError)) throw err
      throw new BadMessageError('too_large', `answer over ${err.maxBytes} bytes`)
    }
    const { status } = answer
    if (status >= 400 && status < 500 && !UNAVAILABLE_STATUSES.has(status)) {
      const reason = status === 404 ? 'not_found' : 'client_error'
      throw new BadMessageError(reason, `messages.get ${status} ${errorReason(answer.body)}`)
    }
    const body = okBody(answer, 'messages.get')
    if (typeof body.raw !== 'string' || !BASE64URL.test(body.raw)) {
      throw new BadMessageError('no_raw', 'messages.get 200 without a base64url raw')
    }
    return {
      id,
      labelIds: stringsOrNull(body.labelIds) ?? [],
      // Node's base64url decoder takes the unpadded form Gmail sends.
      raw: Buffer.from(body.raw, 'base64url'),
    }
  }

  private url(path: string, query: Record<string, string> = {}): string {
    const url = new URL(`${this.baseUrl}/gmail/v1/users/me/${path}`)
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value)
    return url.toString()
  }

  private async ok(endpoint: string, url: string, maxBytes: number) {
    return okBody(await this.get(endpoint, url, maxBytes), endpoint)
  }

  /** GET with a bearer token; on 401, once more with a freshly refreshed token. */
  private async get(endpoint: string, url: string, maxBytes: number): Promise<JsonAnswer> {
    let answer: JsonAnswer | null = null
    for (let attempt = 0; attempt < 2; attempt++) {
      const token = await this.tokens.get()
      answer = await requestJson(
        endpoint,
        async () => ({ url, headers: { authorization: `Bearer ${token}` } }),
        this.http,
        maxBytes,
      )
      if (answer.status !== 401) return answer
      this.tokens.invalidate(token)
    }
    return answer as JsonAnswer
  }
}

/** The token cache and the API client for one mailbox (the poller and the replay alike). */
export function gmailClient(
  config: OAuthClient & { apiBaseUrl: string },
  http: HttpOptions,
  maxMessageBytes = MAX_MESSAGE_BYTES,
): { tokens: AccessTokens; api: GmailApi } {
  const tokens = new AccessTokens(
    {
      tokenUrl: config.tokenUrl,
      clientId: config.clientId,
      clientSecret: config.clientSecret,
      refreshToken: config.refreshToken,
    },
    http,
  )
  return { tokens, api: new GmailApi(config.apiBaseUrl, tokens, http, maxMessageBytes) }
}

function okBody(answer: JsonAnswer, endpoint: string): Record<string, unknown> {
  if (answer.status !== 200) {
    throw new GmailHttpError(answer.status, errorReason(answer.body), endpoint)
  }
  return answer.body
}

function historyId(value: unknown, endpoint: string): string {
  if (typeof value === 'string' && HISTORY_ID.test(value)) return value
  throw new GmailHttpError(200, 'bad_history_id', endpoint)
}

function pageTokenOf(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 && value.length <= 1024 ? value : null
}

function asObject(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {}
}

function arrayOf(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.map(asObject) : []
}

function stringsOrNull(value: unknown): string[] | null {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : null
}
