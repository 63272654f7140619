/**
 * The Gmail poller's parts on their own: configuration, backoff, the OAuth token cache (against
 * the fake Google token endpoint, with an injected clock), and label filtering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readClaimSettings } from '../../claims'
import { ConfigError } from '../../origin/config'
import { BadMessageError, GmailApi } from '../../origin/gmail/api'
import { GMAIL_DEFAULTS, loadGmailConfig } from '../../origin/gmail/config'
import { GmailHttpError, type HttpOptions } from '../../origin/gmail/http'
import { hasSkippedLabel } from '../../origin/gmail/ingest-message'
import { AccessTokens } from '../../origin/gmail/oauth'
import { parseSettings } from '../../worker/config'
import { type FakeGmail, type MessageFault, startFakeGmail } from '../support/fake-gmail'

/** What `fn` throws; undefined when it returns. */
function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  return undefined
}

const REQUIRED = {
  GMAIL_CLIENT_ID: 'client',
  GMAIL_CLIENT_SECRET: 'secret',
  GMAIL_REFRESH_TOKEN: 'refresh',
  GMAIL_MAILBOX: ' Support@Inbound.Example ',
}

describe('configuration', () => {
  it('is off when no GMAIL_* variable is set', () => {
    expect(loadGmailConfig({})).toBeNull()
  })

  it('has Google’s endpoints and a 30 s interval by default; the mailbox is lowercased', () => {
    expect(loadGmailConfig(REQUIRED)).toEqual({
      clientId: 'client',
      clientSecret: 'secret',
      refreshToken: 'refresh',
      mailbox: 'support@inbound.example',
      aliases: new Map(),
      pollIntervalMs: 30_000,
      tokenUrl: GMAIL_DEFAULTS.tokenUrl,
      apiBaseUrl: GMAIL_DEFAULTS.apiBaseUrl,
    })
  })

  it('lists every problem of a half or wrong configuration, naming variables, not values', () => {
    const error = thrown(() =>
      loadGmailConfig({
        GMAIL_CLIENT_ID: 'client',
        GMAIL_MAILBOX: 'not-an-address',
        GMAIL_POLL_INTERVAL_MS: 'soon',
        GMAIL_API_BASE_URL: 'ftp://example',
        EMAIL_MAILBOX_ALIASES: '{"help@inbound.example": 7}',
      }),
    )
    expect(error).toBeInstanceOf(ConfigError)
    const problems = (error as ConfigError).problems.join('\n')
    expect(problems).toMatch(/GMAIL_CLIENT_SECRET, GMAIL_REFRESH_TOKEN/)
    expect(problems).toMatch(/GMAIL_MAILBOX must be/)
    expect(problems).toMatch(/GMAIL_POLL_INTERVAL_MS/)
    expect(problems).toMatch(/GMAIL_API_BASE_URL/)
    expect(problems).toMatch(/EMAIL_MAILBOX_ALIASES: entry 1/)
    expect(problems).not.toMatch(/ftp:|help@/)
  })

  it('reads the Redis variables exactly as the worker does (same prefix, same defaults)', () => {
    const claimFields = (env: Record<string, string>) => {
      const { redis, redisKeyPrefix, dedupTtlSeconds, claimLeaseMs, redisTimeoutMs } =
        parseSettings(env)
      return { redis, redisKeyPrefix, dedupTtlSeconds, claimLeaseMs, redisTimeoutMs }
    }
    expect(readClaimSettings({}, [])).toMatchObject({ redis: null, redisKeyPrefix: '' })
    const env = {
      UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:8079/',
      UPSTASH_REDIS_REST_TOKEN: 't',
      REDIS_KEY_PREFIX: 'p:',
      CLAIM_LEASE_MS: '100',
    }
    expect(readClaimSettings(env, [])).toMatchObject({
      redis: { url: 'http://127.0.0.1:8079', token: 't' },
      redisKeyPrefix: 'p:',
    })
    for (const each of [{}, env])
      expect(readClaimSettings(each, [])).toMatchObject(claimFields(each))
  })
})

describe('labels', () => {
  it.each([
    [['INBOX', 'UNREAD'], false],
    [['INBOX', 'SENT'], true],
    [['DRAFT'], true],
    [['SPAM'], true],
    [['TRASH', 'INBOX'], true],
    [null, false],
  ])('%j skipped: %s', (labels, skipped) => {
    expect(hasSkippedLabel(labels)).toBe(skipped)
  })
})

describe('OAuth access tokens', () => {
  let google: FakeGmail
  const http: HttpOptions = {
    timeoutMs: 5_000,
    retry: { attempts: 3, baseMs: 1, maxMs: 5 },
  }

  beforeAll(async () => {
    google = await startFakeGmail({
      mailbox: 'support@inbound.example',
      tokenLifetimeSeconds: 3600,
    })
  })
  afterAll(async () => {
    await google?.close()
  })

  const client = () => ({
    tokenUrl: `${google.url}/token`,
    clientId: google.clientId,
    clientSecret: google.clientSecret,
    refreshToken: google.refreshToken,
  })

  it('is cached until a minute before it expires, then refreshed', async () => {
    let now = 1_000_000
    const tokens = new AccessTokens(client(), http, () => now)
    const first = await tokens.get()
    now += 3_539_000
    expect(await tokens.get()).toBe(first)
    now += 2_000
    const second = await tokens.get()
    expect(second).not.toBe(first)
    expect(tokens.refreshes).toBe(2)
  })

  it('is refreshed once for concurrent callers, and again after a 401 invalidates it', async () => {
    const tokens = new AccessTokens(client(), http)
    const all = await Promise.all([tokens.get(), tokens.get(), tokens.get()])
    expect(new Set(all).size).toBe(1)
    expect(tokens.refreshes).toBe(1)
    tokens.invalidate('some older token')
    expect(await tokens.get()).toBe(all[0])
    tokens.invalidate(all[0] as string)
    expect(await tokens.get()).not.toBe(all[0])
    expect(tokens.refreshes).toBe(2)
  })

  it('retries a token endpoint that is briefly down; an invalid grant fails at once', async () => {
    google.fail('token', { status: 503 }, 2)
    expect(await new AccessTokens(client(), http).get()).toMatch(/^ya29\./)
    const before = google.requests('token').length
    const revoked = new AccessTokens({ ...client(), refreshToken: 'revoked' }, http)
    const error = await revoked.get().catch((err: unknown) => err)
    expect(error).toBeInstanceOf(GmailHttpError)
    expect(error).toMatchObject({ status: 400, reason: 'invalid_grant', endpoint: 'token' })
    expect(String((error as Error).message)).not.toContain(google.clientSecret)
    expect(google.requests('token').length - before).toBe(1)
  })
})

describe('messages.get: one bad message, or Gmail unavailable', () => {
  let google: FakeGmail
  const http: HttpOptions = {
    timeoutMs: 5_000,
    retry: { attempts: 2, baseMs: 1, maxMs: 5 },
  }
  const MAX_BYTES = 16 * 1024

  beforeAll(async () => {
    google = await startFakeGmail({ mailbox: 'support@inbound.example' })
  })
  afterAll(async () => {
    await google?.close()
  })

  const api = (refreshToken = google.refreshToken) =>
    new GmailApi(
      google.url,
      new AccessTokens(
        {
          tokenUrl: `${google.url}/token`,
          clientId: google.clientId,
          clientSecret: google.clientSecret,
          refreshToken,
        },
        http,
      ),
      http,
      MAX_BYTES,
    )
  const status = (code: number): MessageFault => ({ kind: 'status', status: code })
  const RAW = 'From: a@b.example\r\n\r\nhi\r\n'
  /** What rawMessage throws for a fresh message that answers `fault` (undefined: nothing). */
  async function thrownFor(fault: MessageFault | null, refreshToken?: string): Promise<unknown> {
    const message = google.deliver(RAW)
    if (fault) google.breakMessage(message.id, fault)
    return api(refreshToken)
      .rawMessage(message.id)
      .then(
        () => undefined,
        (err: unknown) => err,
      )
  }

  it.each<[string, MessageFault, string]>([
    ['404', status(404), 'not_found'],
    ['400', status(400), 'client_error'],
    ['410', status(410), 'client_error'],
    ['a 200 without raw', { kind: 'no_raw' }, 'no_raw'],
    ['an answer over the bound', { kind: 'oversize', bytes: 2 * MAX_BYTES }, 'too_large'],
  ])('%s: this message is bad (BadMessageError)', async (_, fault, reason) => {
    const error = await thrownFor(fault)
    expect(error).toBeInstanceOf(BadMessageError)
    expect(error).toMatchObject({ reason })
  })

  it.each<[string, MessageFault, object]>([
    ['401 even with a fresh token', status(401), { status: 401, exhausted: false }],
    ['403 (rate limits, scope)', status(403), { status: 403, exhausted: false }],
    ['408', status(408), { status: 408 }],
    ['429 after the retries', status(429), { status: 429, exhausted: true }],
    ['503 after the retries', status(503), { status: 503, exhausted: true }],
  ])('%s: Gmail is unavailable (GmailHttpError), not the message', async (_, fault, fields) => {
    const error = await thrownFor(fault)
    expect(error).toBeInstanceOf(GmailHttpError)
    expect(error).not.toBeInstanceOf(BadMessageError)
    expect(error).toMatchObject({ endpoint: 'messages.get', ...fields })
  })

  it('a refresh token Google refuses is OAuth failing, not the message', async () => {
    const error = await thrownFor(null, 'revoked')
    expect(error).toBeInstanceOf(GmailHttpError)
    expect(error).toMatchObject({ endpoint: 'token', status: 400 })
  })

  it('a good message is its raw bytes', async () => {
    const message = google.deliver(RAW)
    expect((await api().rawMessage(message.id)).raw.toString()).toBe(RAW)
  })
})
