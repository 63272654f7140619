/**
 * The console's server side against real Postgres, over HTTP: the Worker's decision counts
 * (`POST /v1/decisions`, signed), sessions (expiry, sign-out), bulk replay (estimate, run, cancel,
 * audit; a second run replays nothing), lookup by a delivery id, payload mismatches with both
 * hashes, and no token in the logs.
 */
import { describe, expect, it } from 'vitest'
import type { ConsoleDeps } from '../../../origin/console/app'
import type { ConsoleConfig } from '../../../origin/console/settings'
import { openDatabase } from '../../../origin/db'
import type { Logger } from '../../../origin/log'
import { silentLogger } from '../../../origin/log'
import { signInLimit } from '../../../origin/sign-in-limit'
import { secretList } from '../../../shared/crypto'
import { mountedConsole } from '../../support/console-app'
import { fileTestbed, forFile } from '../../support/for-file'
import { eventFixture, signedPost } from '../../support/origin'

const OPERATOR = 'integration-operator-token'
const logged: string[] = []
const logger: Logger = {
  ...silentLogger,
  warn: (msg, fields) => logged.push(JSON.stringify({ msg, ...fields })),
  error: (msg, fields) => logged.push(JSON.stringify({ msg, ...fields })),
  info: (msg, fields) => logged.push(JSON.stringify({ msg, ...fields })),
}

const tb = fileTestbed()
const ui = forFile(
  async () => {
    const db = openDatabase(
      {
        databaseUrl: tb.databaseUrl,
        databaseDriver: 'neon',
        neonWsProxy: tb.wsProxy,
        dbQueryTimeoutMs: 5000,
        dbConnectTimeoutMs: 1000,
        originTimeoutMs: 2000,
      },
      4,
      silentLogger,
    )
    const app = mountedConsole({
      db,
      logger,
      config: {
        tokens: [{ name: 'ops', role: 'operator', token: OPERATOR }],
        sessionSeconds: 3600,
      },
    })
    return { app, db }
  },
  async ({ db }) => db.close(),
)

const BASE = 'http://console.test/console'
const secret = () => secretList(tb.secret)[0] as string

async function signIn(): Promise<{ cookie: string; csrf: string }> {
  const res = await ui.app.request(`${BASE}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: OPERATOR }),
  })
  expect(res.status).toBe(303)
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string
  const page = await (await ui.app.request(BASE, { headers: { cookie } })).text()
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] as string
  return { cookie, csrf }
}

function post(
  path: string,
  session: { cookie: string; csrf: string },
  fields: Record<string, string> = {},
) {
  return ui.app.request(`${BASE}${path}`, {
    method: 'POST',
    headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: session.csrf, ...fields }),
  })
}

async function deadInbound(count: number, channel = 'slack'): Promise<string[]> {
  const keys: string[] = []
  for (let i = 0; i < count; i++) {
    const event = await eventFixture({ channel: channel as 'slack' })
    const res = await signedPost(
      `${tb.origin.url}/v1/failures/inbound`,
      JSON.stringify({
        channel,
        deliveryKey: event.deliveryKey,
        event,
        error: 'origin 503',
        attempts: 2,
      }),
      secret(),
    )
    expect(res.status).toBe(201)
    keys.push(event.deliveryKey)
  }
  return keys
}

describe('POST /v1/decisions', () => {
  const flush = () => ({ ...batch, id: crypto.randomUUID() })
  const batch = {
    rows: [
      {
        minute: 1_800_000_000 - (1_800_000_000 % 60),
        channel: 'slack',
        decision: 'duplicate',
        decidedBy: 'redis',
        reason: '',
        count: 2,
        histogram: [2, 0, 0, 0, 0, 0],
      },
    ],
    keys: [
      {
        deliveryKey: 'dedup:slack:A1:EvX',
        channel: 'slack',
        decision: 'duplicate',
        decidedBy: 'redis',
        reason: '',
        payloadMismatch: false,
        ms: 3,
        at: Date.now(),
      },
    ],
    dropped: 0,
  }

  it('signed: the minute counts add up across flushes; the sampled keys are kept', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await signedPost(
        `${tb.origin.url}/v1/decisions`,
        JSON.stringify(flush()),
        secret(),
      )
      expect(res.status).toBe(200)
    }
    const { rows } = await tb.sql.query(
      `SELECT count::int, ms_le_5::int FROM gateway_decisions WHERE channel = 'slack' AND decision = 'duplicate'`,
    )
    expect(rows).toEqual([{ count: 4, ms_le_5: 4 }])
    expect(await tb.count('gateway_decision_keys', "delivery_key = 'dedup:slack:A1:EvX'")).toBe(2)
  })

  it('one batch sent twice (resent after a timeout, or replayed) is counted once', async () => {
    const once = { ...flush(), rows: [{ ...batch.rows[0], channel: 'twice-sent' }], keys: [] }
    for (let i = 0; i < 3; i++) {
      const res = await signedPost(`${tb.origin.url}/v1/decisions`, JSON.stringify(once), secret())
      expect(res.status).toBe(200)
    }
    const { rows } = await tb.sql.query(
      `SELECT count::int FROM gateway_decisions WHERE channel = 'twice-sent'`,
    )
    expect(rows).toEqual([{ count: 2 }])
  })

  it('unsigned or malformed: refused, nothing written', async () => {
    const before = await tb.count('gateway_decision_keys')
    const forged = await signedPost(
      `${tb.origin.url}/v1/decisions`,
      JSON.stringify(flush()),
      'not-the-secret',
    )
    expect(forged.status).toBe(401)
    const bad = await signedPost(
      `${tb.origin.url}/v1/decisions`,
      JSON.stringify({ rows: 'x' }),
      secret(),
    )
    expect(bad.status).toBe(400)
    expect(await tb.count('gateway_decision_keys')).toBe(before)
  })
})

describe("the overview's health row", () => {
  /** The number in one health cell (`data-health`) of the overview page. */
  async function healthCell(cookie: string, name: string): Promise<number> {
    const page = await (await ui.app.request(BASE, { headers: { cookie } })).text()
    const cell = new RegExp(`data-health="${name}"[^>]*>\\s*(\\d+)\\s*<`).exec(page)
    if (!cell) throw new Error(`no ${name} cell in the overview`)
    return Number(cell[1])
  }

  it('retried (last hour): the spool retries the Worker flushed, summed over channels and reasons; not a delivery column', async () => {
    const { cookie } = await signIn()
    const before = await healthCell(cookie, 'retried')
    const minute = Math.floor(Date.now() / 60_000) * 60
    const retried = (channel: string, reason: string, count: number) => ({
      minute,
      channel,
      decision: 'retried',
      decidedBy: 'gateway',
      reason,
      count,
      histogram: [0, 0, 0, 0, 0, 0],
    })
    const hourAgo = { ...retried('slack', 'origin_503', 50), minute: minute - 2 * 3600 }
    const res = await signedPost(
      `${tb.origin.url}/v1/decisions`,
      JSON.stringify({
        id: crypto.randomUUID(),
        rows: [
          retried('slack', 'origin_503', 2),
          retried('retry-only', 'origin_timeout', 3),
          hourAgo,
        ],
        keys: [],
        dropped: 0,
      }),
      secret(),
    )
    expect(res.status).toBe(200)
    expect(await healthCell(cookie, 'retried')).toBe(before + 5)
    const page = await (await ui.app.request(BASE, { headers: { cookie } })).text()
    expect(page).toContain('retried (last hour)')
    // A channel with nothing but retries has no row among the deliveries.
    expect(page).not.toContain('data-channel="retry-only"')
  })
})

describe('unrecognized events in the console', () => {
  it("a kept unrecognized event: counted in the overview's column, listed among the failures with its reason and a Replay button", async () => {
    const { cookie } = await signIn()
    const channel = `unrec-${Date.now().toString(36)}`
    const deliveryKey = `dedup:unrecognized:${channel}:U1:h0123456789abcdef`
    const event = {
      v: 1,
      kind: 'unrecognized',
      channel,
      deliveryKey,
      reason: 'line_type_futureEvent',
      tenant: 'U1',
      path: '/webhooks/line',
      contentType: 'application/json',
      body: '{"events":[{"type":"futureEvent"}]}',
      encoding: 'text',
      receivedAt: Date.now(),
    }
    const recorded = await signedPost(
      `${tb.origin.url}/v1/failures/inbound`,
      JSON.stringify({
        channel,
        deliveryKey,
        event,
        error: 'unrecognized_event: line_type_futureEvent',
        attempts: 0,
      }),
      secret(),
    )
    expect(recorded.status).toBe(201)
    const minute = Math.floor(Date.now() / 60_000) * 60
    const counted = await signedPost(
      `${tb.origin.url}/v1/decisions`,
      JSON.stringify({
        id: crypto.randomUUID(),
        rows: [
          {
            minute,
            channel,
            decision: 'unrecognized',
            decidedBy: 'gateway',
            reason: 'line_type_futureEvent',
            count: 3,
            histogram: [3, 0, 0, 0, 0, 0],
          },
        ],
        keys: [],
        dropped: 0,
      }),
      secret(),
    )
    expect(counted.status).toBe(200)

    const overview = await (await ui.app.request(BASE, { headers: { cookie } })).text()
    expect(overview).toContain('kept unrecognized')
    const row = new RegExp(`<tr data-channel="${channel}">([\\s\\S]*?)</tr>`).exec(overview)?.[1]
    expect(row, 'the channel has its row in the overview').toBeDefined()
    expect(/data-category="unrecognized"[^>]*>\s*(?:<[^>]+>\s*)*(\d+)/.exec(row ?? '')?.[1]).toBe(
      '3',
    )

    const failures = await (
      await ui.app.request(`${BASE}/failures?channel=${channel}`, { headers: { cookie } })
    ).text()
    const listed = /<tr data-failure-id="(\d+)">([\s\S]*?)<\/tr>/.exec(failures)
    expect(listed, 'the dead letter is listed').not.toBeNull()
    expect(listed?.[2]).toContain('unrecognized_event: line_type_futureEvent')
    expect(listed?.[2]).toContain(deliveryKey)
    expect(listed?.[2]).toContain(`/console/failures/${listed?.[1]}/replay`)
  })
})

describe('sessions', () => {
  it('an expired session signs out; sign-out ends the session; no token in any log line', async () => {
    logged.length = 0
    const session = await signIn()
    expect((await ui.app.request(BASE, { headers: { cookie: session.cookie } })).status).toBe(200)
    await tb.sql.query(`UPDATE console_sessions SET expires_at = now() - interval '1 second'`)
    const expired = await ui.app.request(BASE, { headers: { cookie: session.cookie } })
    expect([expired.status, expired.headers.get('location')]).toEqual([303, '/console/login'])

    const again = await signIn()
    expect((await post('/logout', again)).status).toBe(303)
    expect((await ui.app.request(BASE, { headers: { cookie: again.cookie } })).status).toBe(303)

    await ui.app.request(`${BASE}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'a-wrong-token-to-not-log' }),
    })
    const all = logged.join('\n')
    expect(all).toMatch(/console sign-in refused/)
    expect(all).not.toContain('a-wrong-token-to-not-log')
    expect(all).not.toContain(OPERATOR)
    expect(all).not.toContain(session.cookie.split('=')[1])
  })
})

describe('who may stay signed in, and how often one may guess', () => {
  /** A console of its own on the same database: its own tokens and sign-in limit. */
  function ownConsole(deps: Partial<ConsoleDeps>) {
    const config: ConsoleConfig = {
      tokens: [{ name: 'ops', role: 'operator', token: OPERATOR }],
      sessionSeconds: 3600,
    }
    const app = mountedConsole({ db: ui.db, logger, config, ...deps })
    const signInWith = (token: string) =>
      app.request(`${BASE}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }),
      })
    return { app, config, signInWith }
  }

  it('a session ends when its token is rotated, removed or demoted, not only when it expires', async () => {
    const { app, config, signInWith } = ownConsole({})
    const signedIn = async () => {
      const res = await signInWith(OPERATOR)
      expect(res.status).toBe(303)
      return (res.headers.get('set-cookie') ?? '').split(';')[0] as string
    }
    const page = (cookie: string) => app.request(BASE, { headers: { cookie } })

    const rotated = await signedIn()
    expect((await page(rotated)).status).toBe(200)
    config.tokens = [{ name: 'ops', role: 'operator', token: `${OPERATOR}-rotated` }]
    expect((await page(rotated)).status).toBe(303)
    // Rotated back, the old session is gone for good: it was deleted at its refusal.
    config.tokens = [{ name: 'ops', role: 'operator', token: OPERATOR }]
    expect((await page(rotated)).status).toBe(303)

    const demoted = await signedIn()
    config.tokens = [{ name: 'ops', role: 'viewer', token: OPERATOR }]
    expect((await page(demoted)).status).toBe(303)

    config.tokens = [{ name: 'ops', role: 'operator', token: OPERATOR }]
    const removed = await signedIn()
    config.tokens = []
    expect((await page(removed)).status).toBe(303)
  })

  it('past the limit of refused sign-ins, every sign-in is 429 for the window, the right token too', async () => {
    const { signInWith } = ownConsole({ signInLimit: signInLimit(3, 60_000) })
    for (let i = 0; i < 3; i++) expect((await signInWith(`wrong-guess-${i}`)).status).toBe(401)
    const limited = await signInWith(OPERATOR)
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await signInWith('wrong-guess-again')).status).toBe(429)
  })
})

describe("the console's response headers", () => {
  const CSP =
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

  it('every answer (sign-in page, signed-in page, redirect, refusal, not found) carries the policy', async () => {
    const session = await signIn()
    const answers = await Promise.all([
      ui.app.request(`${BASE}/login`),
      ui.app.request(BASE, { headers: { cookie: session.cookie } }),
      ui.app.request(BASE),
      ui.app.request(`${BASE}/bulk-replays`, { method: 'POST' }),
      ui.app.request(`${BASE}/jobs/999999999`, { headers: { cookie: session.cookie } }),
    ])
    expect(answers.map((res) => res.status)).toEqual([200, 200, 303, 401, 404])
    for (const res of answers) {
      expect(res.headers.get('content-security-policy')).toBe(CSP)
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      // same-origin, not no-referrer: a sign-in form must not read as cross-site (Origin: null).
      expect(res.headers.get('referrer-policy')).toBe('same-origin')
      expect(res.headers.get('cache-control')).toBe('no-store')
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin')
      expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin')
      // HSTS is for whoever terminates TLS for the whole host, not for the console's path.
      expect(res.headers.get('strict-transport-security')).toBeNull()
    }
  })
})

describe('sign-in from another site', () => {
  it('a cross-site sign-in form is refused (login CSRF); a same-origin one works', async () => {
    const attempt = (headers: Record<string, string>) =>
      ui.app.request(`${BASE}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ token: OPERATOR }),
      })
    expect((await attempt({ origin: 'https://evil.example' })).status).toBe(403)
    expect((await attempt({ 'sec-fetch-site': 'cross-site' })).status).toBe(403)
    expect(
      (await attempt({ origin: 'https://evil.example', 'sec-fetch-site': 'same-site' })).status,
    ).toBe(403)
    expect((await attempt({ origin: 'http://console.test' })).status).toBe(303)
    // A browser on a page with Referrer-Policy no-referrer sends `Origin: null`; Sec-Fetch-Site decides.
    expect((await attempt({ origin: 'null', 'sec-fetch-site': 'same-origin' })).status).toBe(303)
  })
})

describe('bulk replay', () => {
  it('estimate, run, audit: every dead row once; a second run finds nothing', async () => {
    const keys = await deadInbound(5, 'telegram')
    const session = await signIn()
    const estimate = await (
      await ui.app.request(`${BASE}/bulk-replays/new?channel=telegram`, {
        headers: { cookie: session.cookie },
      })
    ).text()
    expect(estimate).toMatch(/5 dead rows match this filter; this run replays 5/)

    const started = await post('/bulk-replays', session, { channel: 'telegram' })
    expect(started.status).toBe(303)
    const job = started.headers.get('location') as string
    let page = ''
    for (let i = 0; i < 100 && !/id="job-status">done/.test(page); i++) {
      await new Promise((r) => setTimeout(r, 100))
      page = await (
        await ui.app.request(`http://console.test${job}`, { headers: { cookie: session.cookie } })
      ).text()
    }
    expect(page).toMatch(/5 of 5 replayed: 5 resolved, 0 still failing/)
    for (const key of keys) {
      expect(await tb.count('messages', 'first_delivery_key = $1', [key])).toBe(1)
      expect(
        await tb.count('channel_failures', "delivery_key = $1 AND status = 'resolved'", [key]),
      ).toBe(1)
    }
    expect(
      await tb.count('console_audit', "actor = 'ops' AND action = 'replay' AND result LIKE 'ok:%'"),
    ).toBe(5)

    const second = await (
      await ui.app.request(`${BASE}/bulk-replays/new?channel=telegram`, {
        headers: { cookie: session.cookie },
      })
    ).text()
    expect(second).toMatch(/0 dead rows match/)
  })

  it('ids across a digit boundary (995 to 1004): every row replayed, in id order', async () => {
    await tb.sql.query('ALTER TABLE channel_failures ALTER COLUMN id RESTART WITH 995')
    const keys = await deadInbound(10, 'sms')
    const session = await signIn()
    const started = await post('/bulk-replays', session, { channel: 'sms' })
    const id = /\/console\/jobs\/(\d+)/.exec(started.headers.get('location') ?? '')?.[1] as string
    let status = ''
    for (let i = 0; i < 100 && status !== 'done'; i++) {
      await new Promise((r) => setTimeout(r, 100))
      const { rows } = await tb.sql.query<{ status: string }>(
        'SELECT status FROM console_jobs WHERE id = $1',
        [id],
      )
      status = rows[0]?.status ?? ''
    }
    for (const key of keys) {
      expect(
        await tb.count('channel_failures', "delivery_key = $1 AND status = 'resolved'", [key]),
      ).toBe(1)
    }
    // The list pages in id order too: 1004 first, 995 last.
    const list = await (
      await ui.app.request(`${BASE}/failures?channel=sms`, { headers: { cookie: session.cookie } })
    ).text()
    const ids = [...list.matchAll(/data-failure-id="(\d+)"/g)].map((m) => Number(m[1]))
    expect(ids).toEqual([...ids].sort((a, b) => b - a))
  })

  it('cancel: the run stops before its next row; what is left stays dead', async () => {
    await deadInbound(60, 'whatsapp')
    const session = await signIn()
    const started = await post('/bulk-replays', session, { channel: 'whatsapp' })
    const id = /\/console\/jobs\/(\d+)/.exec(started.headers.get('location') ?? '')?.[1] as string
    expect((await post(`/jobs/${id}/cancel`, session)).status).toBe(303)
    let status = ''
    for (let i = 0; i < 100 && status !== 'cancelled'; i++) {
      await new Promise((r) => setTimeout(r, 100))
      const { rows } = await tb.sql.query<{ status: string }>(
        'SELECT status FROM console_jobs WHERE id = $1',
        [id],
      )
      status = rows[0]?.status ?? ''
    }
    expect(status).toBe('cancelled')
    const { rows } = await tb.sql.query<{ done: number }>(
      'SELECT done FROM console_jobs WHERE id = $1',
      [id],
    )
    const done = rows[0]?.done ?? 0
    expect(done).toBeLessThan(60)
    expect(await tb.count('channel_failures', "channel = 'whatsapp' AND status = 'dead'")).toBe(
      60 - done,
    )
  })

  it('without the CSRF token, or as nobody: refused, nothing started', async () => {
    const session = await signIn()
    const before = await tb.count('console_jobs')
    const noToken = await ui.app.request(`${BASE}/bulk-replays`, {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ channel: 'whatsapp' }),
    })
    expect(noToken.status).toBe(403)
    const nobody = await ui.app.request(`${BASE}/bulk-replays`, { method: 'POST' })
    expect(nobody.status).toBe(401)
    expect(await tb.count('console_jobs')).toBe(before)
  })
})

describe('replay one', () => {
  it("replays a dead letter; the page's flash says what the replay service answered, as audited", async () => {
    const [key] = await deadInbound(1, 'line')
    const { rows } = await tb.sql.query<{ id: string }>(
      'SELECT id::text FROM channel_failures WHERE delivery_key = $1',
      [key],
    )
    const id = rows[0]?.id as string
    const session = await signIn()
    const flashOf = async (failureId: string) => {
      const replayed = await post(`/failures/${failureId}/replay`, session)
      expect(replayed.status).toBe(303)
      const location = replayed.headers.get('location') as string
      expect(location).toBe(`/console/failures?replayed=${failureId}`)
      const page = await (
        await ui.app.request(`http://console.test${location}`, {
          headers: { cookie: session.cookie },
        })
      ).text()
      return /role="status"[^>]*>([^<]*)</.exec(page)?.[1]
    }
    expect(await flashOf(id)).toMatch(
      new RegExp(
        `^Replay of failure ${id}: ok: failure ${id}: ${key} ingested \\(created, message \\d+\\); resolved$`,
      ),
    )
    expect(await tb.count('messages', 'first_delivery_key = $1', [key])).toBe(1)
    expect(await flashOf(id)).toBe(
      `Replay of failure ${id}: ok: failure ${id}: already resolved; nothing to replay`,
    )
    expect(await flashOf('987654321')).toBe(
      'Replay of failure 987654321: failed: failure 987654321: no such row',
    )
    expect(await tb.count('messages', 'first_delivery_key = $1', [key])).toBe(1)
  })
})

describe('lookup and mismatches', () => {
  it('a Slack event id finds its message; a resend with other content is listed with both hashes', async () => {
    const event = await eventFixture({ deliveryKey: 'dedup:slack:A1:EvLookup1', body: 'first' })
    expect((await tb.post(event)).status).toBe(201)
    const changed = await eventFixture({
      deliveryKey: 'dedup:slack:A1:EvLookup2',
      messageKey: event.messageKey,
      body: 'changed',
    })
    expect((await tb.post(changed)).body.payloadMismatch).toBe(true)

    const session = await signIn()
    const found = await (
      await ui.app.request(`${BASE}/lookup?q=EvLookup1`, { headers: { cookie: session.cookie } })
    ).text()
    expect(found).toContain(event.messageKey)
    expect(found).toContain('first')
    await new Promise((r) => setTimeout(r, 200)) // the mismatch row is written after the answer
    const listed = await (
      await ui.app.request(`${BASE}/mismatches`, { headers: { cookie: session.cookie } })
    ).text()
    expect(listed).toContain('dedup:slack:A1:EvLookup2')
    expect(listed).toContain(event.payloadHash)
    expect(listed).toContain(changed.payloadHash)
  })
})

describe('lookup: a message’s edits', () => {
  it('lists every edit oldest first, with time, sequence and text, the late one marked; vendor text stays text', async () => {
    const original = await eventFixture({ body: 'v1', occurredAt: '2026-12-01T09:00:00.000Z' })
    const edit = (body: string, minute: number, editSeq?: number) =>
      eventFixture({
        ...original,
        kind: 'edit',
        body,
        occurredAt: `2026-12-01T09:0${minute}:00.000Z`,
        deliveryKey: `EvEdit${minute}${original.deliveryKey}`,
        ...(editSeq === undefined ? {} : { editSeq }),
      })
    const newest = await edit('<script>alert(1)</script> v4', 4, 9)
    const late = await edit('v2 & late', 2)
    const middle = await edit('v3', 3)
    for (const event of [original, middle, newest, late, middle]) {
      expect((await tb.post(event)).status).toBeLessThan(300)
    }

    const session = await signIn()
    const page = await (
      await ui.app.request(`${BASE}/lookup?q=${encodeURIComponent(original.deliveryKey)}`, {
        headers: { cookie: session.cookie },
      })
    ).text()
    const edits = /<table class="edits">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? ''
    const rows = [...edits.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)]
      .slice(1)
      .map(([, row]) => [...(row ?? '').matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map(([, c]) => c))
    expect(rows.map((cells) => cells.slice(0, 2))).toEqual([
      ['2026-12-01 09:02:00Z', '—'],
      ['2026-12-01 09:03:00Z', '—'],
      ['2026-12-01 09:04:00Z', '9'],
    ])
    expect(rows.map((cells) => cells[2])).toEqual([
      '<div class="edit-text">v2 &amp; late</div>',
      '<div class="edit-text">v3</div>',
      '<div class="edit-text">&lt;script&gt;alert(1)&lt;/script&gt; v4</div>',
    ])
    expect(rows.map((cells) => /not applied/.test(cells[4] ?? ''))).toEqual([true, false, false])
    expect(page).not.toContain('<script>alert(1)')
    expect(page).toContain('last applied 2026-12-01 09:04:00Z (sequence 9)')
  })
})
