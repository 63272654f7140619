/**
 * The four Gmail API calls the poller makes (users.getProfile, users.history.list,
 * users.messages.list, users.messages.get format=raw), for the authorized user (`me`), with the
 * answers checked into small typed shapes. A 401 drops the access token and tries once more with
 * a fresh one; a 404 from history.list is {@link HistoryExpiredError} (the stored historyId is too
 * old: do a full sync); a 404 from messages.get is null (deleted since it was listed).
 * @module
 */
import { errorReason, GmailHttpError, type HttpOptions, type JsonAnswer, requestJson } from './http'
import type { AccessTokens } from './oauth'

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

export class HistoryExpiredError extends Error {
  constructor() {
    super('history.list: startHistoryId is too old (404): full sync needed')
    this.name = 'HistoryExpiredError'
  }
}

/** Answers are bounded: listing pages are small; a raw message is at most ~34 MiB (25 MiB, base64). */
const MAX_LIST_BYTES = 8 * 1024 * 1024
const MAX_MESSAGE_BYTES = 40 * 1024 * 1024
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

  /** The message as RFC 822 bytes, or null when it no longer exists. */
  async rawMessage(id: string): Promise<RawMessage | null> {
    const url = this.url(`messages/${encodeURIComponent(id)}`, { format: 'raw' })
    const answer = await this.get('messages.get', url, MAX_MESSAGE_BYTES)
    if (answer.status === 404) return null
    const body = okBody(answer, 'messages.get')
    if (typeof body.raw !== 'string') throw new GmailHttpError(200, 'no_raw', 'messages.get')
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
