/**
 * The operator console end to end, in a real browser (Debian's Chromium through playwright-core)
 * against the whole local stack: the Worker in Miniflare with real signed vendor deliveries, the
 * origin process, real Postgres and Redis. What the operator sees: sign-in, the overview's counts
 * by deciding layer (from the Worker's flushed counters; the API's `api` row too), lookup by a vendor id (with its edits),
 * a dead letter (its spool retry in the health row) replayed with one click, vendor content
 * escaped, CSRF refused.
 */
import assert from 'node:assert/strict'
import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, type RunningBrowser } from '../../../local/chromium'
import { randomHex, slackDelivery, twilioDelivery } from '../../../local/vendor-deliveries'
import { sha256Hex } from '../../../shared/crypto'
import { DONE_VALUE } from '../../support/claim-values'
import { eventually, startTestStack, type TestStack } from '../../support/test-stack'
import { ConsolePage } from './support/console-page'

const OPERATOR = 'console-test-operator-token'
const VIEWER = 'console-test-viewer-token'
const API_KEY = 'console-test-api-key'

let e2e: TestStack
let chromium: RunningBrowser
let context: BrowserContext
let ui: ConsolePage

beforeAll(async () => {
  ;[e2e, chromium] = await Promise.all([
    startTestStack('console', {
      originEnv: { OPERATOR_TOKEN: OPERATOR, CONSOLE_TOKENS: `vera:viewer:${VIEWER}` },
      originsUseRedis: true,
      workerVars: {
        API_KEYS: JSON.stringify({ [await sha256Hex(API_KEY)]: 'acme' }),
        DECISION_FLUSH_SECONDS: '1',
        SPOOL_RETRY_BASE_SECONDS: '1',
        SPOOL_RETRY_MAX_SECONDS: '1',
        SPOOL_MAX_ATTEMPTS: '2',
      },
      onWorkerLine: () => {},
    }),
    launchChromium(),
  ])
  context = await chromium.browser.newContext({ viewport: { width: 1280, height: 900 } })
  ui = new ConsolePage(await context.newPage(), e2e.stack.origin.url)
}, 180_000)

afterAll(async () => {
  await context?.close()
  await chromium?.close()
  await e2e?.stop()
})

describe('the operator console', () => {
  it('unauthenticated: the login page; a wrong token stays there; the operator token signs in', async () => {
    const { page } = ui
    await page.goto(`${ui.base}/console`)
    assert.equal(new URL(page.url()).pathname, '/console/login')
    await page.getByLabel('Token').fill('not-a-configured-token')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page
      .getByRole('alert')
      .waitFor({ timeout: 5_000 })
      .catch(async (err) => {
        throw new Error(`no alert; the page says: ${(await page.content()).slice(0, 500)}`, {
          cause: err,
        })
      })
    assert.match((await page.getByRole('alert').textContent()) ?? '', /does not sign in/)

    await ui.signIn(OPERATOR)
    const cookie = (await context.cookies()).find((c) => c.name === 'console_session')
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' })
    assert.equal(await page.getByRole('heading', { name: 'Overview' }).count(), 1)
  })

  it('3 copies of one Slack event and a forged one: 1 new, 2 duplicates at Redis, 1 rejected', async () => {
    const event = slackDelivery()
    for (let i = 0; i < 3; i++) expect(await e2e.deliver(event)).toBe(200)
    expect(await e2e.deliver(slackDelivery({ forged: true }))).toBe(401)
    await eventually(async () => (await ui.count('slack', 'rejected')) === 1, 30_000)
    await eventually(async () => (await ui.count('slack', 'duplicate_redis')) === 2, 30_000)
    expect(await ui.count('slack', 'forwarded')).toBe(1)
    expect(await ui.count('slack', 'duplicate_postgres')).toBe(0)
    const rejected = ui.page.locator('tr[data-channel="slack"] td[data-category="rejected"]')
    assert.match((await rejected.textContent()) ?? '', /bad_signature: 1/)
    expect(await e2e.rows(event)).toBe(1)
    // The overview names the layer that decided "new" as the lookup does: the Redis claim.
    const newHeader = ui.page.locator('#decisions th', { hasText: 'new (forwarded)' })
    assert.match((await newHeader.textContent()) ?? '', /Redis \(first claim\)/)
    // The table fits its panel at 1280 px: it ends where the page's content does.
    const [table, main] = await Promise.all(
      ['#decisions', 'main'].map((s) => ui.page.locator(s).boundingBox()),
    )
    assert.ok(table && main)
    expect(table.x + table.width).toBeLessThanOrEqual(main.x + main.width)
    await ui.lookup(event.deliveryKey)
    const decided = ui.page.locator('#gateway-decisions tr', { hasText: 'forwarded' })
    expect((await decided.locator('td').allTextContents())[3]).toBe('redis')
  })

  it('a Slack event resent with other content: a payload mismatch at Redis, listed with both hashes', async () => {
    const first = slackDelivery({ text: 'the original text' })
    const eventId = first.deliveryKey.split(':').pop() as string
    const ts = first.messageKey.split(':').pop() as string
    const resent = slackDelivery({ eventId, ts, text: 'other text under the same event_id' })
    expect(await e2e.deliver(first)).toBe(200)
    expect(await e2e.deliver(resent)).toBe(200)
    await eventually(async () => (await ui.count('slack', 'payload_mismatch')) === 1, 30_000)
    await ui.page.goto(`${ui.base}/console/mismatches`)
    const row = ui.page.locator('tr', { hasText: first.deliveryKey })
    await row.first().waitFor()
    const cells = (await row.first().locator('td').allTextContents()).map((t) => t.trim())
    expect(cells[1]).toBe('redis')
    const [stored, offered] = cells.slice(5)
    expect(stored).toMatch(/^[0-9a-f]{14,}$/)
    expect(offered).toMatch(/^[0-9a-f]{14,}$/)
    expect(offered?.startsWith(stored as string)).toBe(false)
    expect(await e2e.rows(first)).toBe(1)
  })

  it('API messages: the overview counts an api row by layer (new, duplicate at Redis, mismatch)', async () => {
    const key = crypto.randomUUID()
    const post = async (text: string) =>
      (
        await fetch(`${e2e.stack.worker.url}/v1/messages`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${API_KEY}`,
            'content-type': 'application/json',
            'idempotency-key': key,
          },
          body: JSON.stringify({ customer: { id: 'cust-console' }, text }),
          signal: AbortSignal.timeout(30_000),
        })
      ).status
    expect(await post('hello from the API')).toBe(201)
    expect(await post('hello from the API')).toBe(201)
    expect(await post('another text under the same key')).toBe(422)
    await eventually(async () => (await ui.count('api', 'payload_mismatch')) === 1, 30_000)
    await eventually(async () => (await ui.count('api', 'duplicate_redis')) === 1, 30_000)
    expect(await ui.count('api', 'forwarded')).toBe(1)
    expect(await ui.count('api', 'duplicate_postgres')).toBe(0)
  })

  it('a Twilio message looked up by its MessageSid: the row, its customer, outbox and Redis claim', async () => {
    const messageSid = `SM${randomHex(16)}`
    const message = twilioDelivery({ messageSid, body: 'where is my order?' })
    expect(await e2e.deliver(message)).toBe(200)
    await ui.lookup(messageSid)
    const card = ui.page.locator('.message')
    await card.first().waitFor()
    expect(await card.count()).toBe(1)
    const text = (await card.textContent()) ?? ''
    assert.match(text, new RegExp(message.messageKey))
    assert.match(text, /where is my order\?/)
    assert.match(text, /message\.created/)
    const claims = (await ui.page.locator('table').last().textContent()) ?? ''
    assert.match(
      (await ui.page.getByText(message.deliveryKey).first().textContent()) ?? '',
      /dedup:wa:/,
    )
    expect(claims.length).toBeGreaterThan(0)
    assert.match((await ui.page.content()) ?? '', /done, hash [0-9a-f]+, \d+ s left/)
    // No DOWNSTREAM_URL here: the outbox row is "relay off", not a red "not relayed".
    const outbox = card.locator('tr', { hasText: 'outbox' })
    assert.match((await outbox.textContent()) ?? '', /relay off/)
    expect(await outbox.locator('.bad').count()).toBe(0)
  })

  it('vendor content renders as text: <script> and "><img onerror> stay text', async () => {
    const body = `<script>window.__xss = 1</script>"><img src=x onerror="window.__xss = 2">`
    const event = slackDelivery({ text: body })
    expect(await e2e.deliver(event)).toBe(200)
    await ui.lookup(event.messageKey.split(':').pop() as string)
    const shown = ui.page.locator('.message .body')
    await shown.first().waitFor()
    expect(await shown.first().textContent()).toBe(body)
    expect(await ui.page.locator('.message .body img, .message .body script').count()).toBe(0)
    expect(await ui.page.evaluate('window.__xss')).toBeUndefined()
  })

  it('an edit with markup is listed under the message as text, after the older edit', async () => {
    const original = slackDelivery({ text: 'before' })
    const ts = original.messageKey.split(':').pop() as string
    const editAt = (seconds: number) => `${Number(ts.split('.')[0]) + seconds}.000001`
    const markup = `<script>window.__xss = 3</script><img src=x onerror="window.__xss = 4">`
    const later = slackDelivery({ ts, text: markup, editedAt: editAt(20) })
    const earlier = slackDelivery({ ts, text: 'first fix', editedAt: editAt(10) })
    for (const delivery of [original, later, earlier]) expect(await e2e.deliver(delivery)).toBe(200)
    await ui.lookup(ts)
    const edits = ui.page.locator('.message .edit-text')
    await edits.first().waitFor()
    expect(await edits.allTextContents()).toEqual(['first fix', markup])
    expect(await ui.page.locator('.message .edits img, .message .edits script').count()).toBe(0)
    expect(await ui.page.evaluate('window.__xss')).toBeUndefined()
  })

  it('the origin killed, an event dead-lettered; one click on Replay: one row, the failure resolved', async () => {
    const event = slackDelivery()
    await e2e.stack.origin.kill('SIGKILL')
    try {
      expect(await e2e.deliver(event)).toBe(200) // spooled
      // The spool's two attempts fail; the event goes to the dead letters.
      await eventually(async () => {
        const stats = await e2e.stack.redisClient.hget(
          `${e2e.stack.keyPrefix}dedup:stats`,
          'spool_dead:slack',
        )
        return Number(stats ?? 0) >= 1
      }, 60_000)
    } finally {
      await e2e.stack.origin.restart()
    }
    // The dead-letter consumer records it through the origin once it is back (its retry: 15-30 s).
    const deadRow = async () => {
      const { rows } = await e2e.stack.sql.query<{ id: string; status: string }>(
        `SELECT id::text, status FROM channel_failures WHERE delivery_key = $1`,
        [event.deliveryKey],
      )
      return rows[0]
    }
    await eventually(async () => (await deadRow())?.status === 'dead', 90_000)
    // Its first attempt was given back to the queue: a spool retry, counted in the Worker while
    // the origin was down and sent once a consumer batch ran with the origin back.
    await eventually(async () => (await ui.health('retried')) >= 1, 30_000)
    expect(await ui.health('dead')).toBeGreaterThanOrEqual(1)
    const id = (await deadRow())?.id as string
    expect(await e2e.rows(event)).toBe(0)

    await ui.page.goto(`${ui.base}/console/failures?status=dead`)
    const row = ui.page.locator(`tr[data-failure-id="${id}"]`)
    await row.getByRole('button', { name: 'Replay' }).click()
    await ui.page.waitForURL(/replayed=/)
    assert.match((await ui.page.getByRole('status').textContent()) ?? '', /ok: failure \d+: /)
    expect(await e2e.rows(event)).toBe(1)
    expect((await deadRow())?.status).toBe('resolved')
    // Landed: its claim is done (it said spooled since the queue took it), and the health row no
    // longer counts it.
    expect(await e2e.claim(event)).toMatch(DONE_VALUE)
    expect(await ui.health('dead')).toBe(0)

    // Replayed again (the CLI's path, as the console's): still one row.
    const again = await ui.page.request.post(`${ui.base}/console/failures/${id}/replay`, {
      form: { _csrf: await csrfToken() },
      maxRedirects: 0,
    })
    expect(again.status()).toBe(303)
    expect(await e2e.rows(event)).toBe(1)
    const { rows: audited } = await e2e.stack.sql.query<{ actor: string; result: string }>(
      `SELECT actor, result FROM console_audit WHERE action = 'replay' AND target = $1 ORDER BY id`,
      [`failure ${id}`],
    )
    expect(audited.map((a) => a.actor)).toEqual(['operator', 'operator'])
    assert.match(audited[0]?.result ?? '', /^ok: /)
  }, 240_000)

  it('a POST without the CSRF token is refused (403), with it accepted; a viewer may not replay', async () => {
    const withoutToken = await ui.page.request.post(`${ui.base}/console/failures/1/replay`, {
      form: { nothing: 'here' },
      maxRedirects: 0,
    })
    expect(withoutToken.status()).toBe(403)
    const wrongToken = await ui.page.request.post(`${ui.base}/console/logout`, {
      form: { _csrf: 'x'.repeat(43) },
      maxRedirects: 0,
    })
    expect(wrongToken.status()).toBe(403)

    const viewer = await chromium.browser.newContext()
    try {
      const asViewer = new ConsolePage(await viewer.newPage(), ui.base)
      await asViewer.signIn(VIEWER)
      const csrf = await asViewer.page.locator('input[name="_csrf"]').first().getAttribute('value')
      const replay = await asViewer.page.request.post(`${ui.base}/console/failures/1/replay`, {
        form: { _csrf: csrf ?? '' },
        maxRedirects: 0,
      })
      expect(replay.status()).toBe(403)
      expect(await asViewer.page.textContent('header .who')).toMatch(/vera \(viewer\)/)
    } finally {
      await viewer.close()
    }
  })
})

/** The session's CSRF token, as the page's forms carry it. */
async function csrfToken(): Promise<string> {
  await ui.page.goto(`${ui.base}/console`)
  return (await ui.page.locator('input[name="_csrf"]').first().getAttribute('value')) ?? ''
}
