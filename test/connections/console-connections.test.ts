/**
 * The console's connection pages in a real browser (Debian's Chromium through playwright-core)
 * against `npm run origin` as a process of its own (origin/main.ts, its every output line kept,
 * at debug level), with ORIGIN_KEKS and real Postgres. An operator creates a Telegram connection
 * with a secret, finds it listed by fingerprint only, rotates it (two kids, the old one with its
 * notAfter), sees the version an event says the edge verified with, disables and enables it, and
 * deletes it; a refused form comes back without its secret; a viewer is refused every page; a
 * POST without the CSRF token changes nothing. Every answer the browser got (bodies and headers),
 * every line the origin wrote and every row of the registry's tables are searched for the
 * secrets: none holds one.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, type RunningBrowser } from '../../local/chromium'
import { type OriginHandle, startOrigin } from '../../local/origin-process'
import { createTestDatabase, databasePool, type TestDatabase } from '../../local/services'
import { newKekEntry } from '../../shared/envelope'
import { eventFixture, signedPost } from '../support/origin'

const OPERATOR = `operator-${randomBytes(12).toString('hex')}`
const VIEWER = `viewer-${randomBytes(12).toString('hex')}`
/** Distinct, greppable secrets: each must appear nowhere the test can look. */
const FIRST = `tgFirst${randomBytes(12).toString('hex')}`
const SECOND = `tgSecond${randomBytes(12).toString('hex')}`
const REFUSED = `tgRefused${randomBytes(12).toString('hex')}`
const SECRETS = [FIRST, SECOND, REFUSED]
const SHARED = `shared-${randomBytes(16).toString('hex')}`
const BOT = String(7_000_000_000 + Math.floor(Math.random() * 1_000_000))

const fingerprint = (secret: string) =>
  `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 8)}`

let db: TestDatabase
let origin: OriginHandle
let chromium: RunningBrowser
let context: BrowserContext
let page: Page
const logLines: string[] = []
/** Every answer the browser was given: status line, headers and body. */
const answers: string[] = []
let connectionId = ''

beforeAll(async () => {
  ;[db, chromium] = await Promise.all([createTestDatabase(), launchChromium()])
  origin = await startOrigin({
    env: {
      DATABASE_URL: db.url,
      DATABASE_DRIVER: 'pg',
      ORIGIN_SHARED_SECRET: SHARED,
      OPERATOR_TOKEN: OPERATOR,
      CONSOLE_TOKENS: `vera:viewer:${VIEWER}`,
      ORIGIN_KEKS: newKekEntry('k1'),
      LOG_LEVEL: 'debug',
    },
    onLine: (line) => logLines.push(line),
  })
  context = await chromium.browser.newContext()
  context.on('response', async (response) => {
    const headers = JSON.stringify(await response.allHeaders())
    const body = await response.text().catch(() => '')
    answers.push(`${response.status()} ${response.url()} ${headers}\n${body}`)
  })
  page = await context.newPage()
}, 120_000)

afterAll(async () => {
  await context?.close()
  await chromium?.close()
  await origin?.kill('SIGTERM')
  await db?.drop()
})

async function signIn(token: string): Promise<void> {
  await page.goto(`${origin.url}/console/login`)
  await page.getByLabel('Token').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(`${origin.url}/console`)
}

/** The secrets cell's lines of connection `id` on the list page. */
async function listedSecrets(id: string): Promise<string[]> {
  await page.goto(`${origin.url}/console/connections`)
  const row = page.locator(`tr[data-connection-id="${id}"]`)
  return row.locator('[data-kid]').allTextContents()
}

describe('the console connection pages', () => {
  it('an operator creates a Telegram connection: its page and the list show a fingerprint, no secret', async () => {
    await signIn(OPERATOR)
    await page.getByRole('link', { name: 'Connections' }).click()
    await page.getByRole('link', { name: 'New connection…' }).click()
    await page.getByLabel('channel').selectOption('telegram')
    await page.getByRole('button', { name: 'Next' }).click()
    await page.getByLabel('account').fill(BOT)
    const secretInput = page.getByLabel('secret_token')
    expect(await secretInput.getAttribute('type')).toBe('password')
    await secretInput.fill(FIRST)
    await page.getByRole('button', { name: 'Create' }).click()
    await page.waitForURL(/\/console\/connections\/c_[a-z2-7]{26}\?done=created$/)
    connectionId = new URL(page.url()).pathname.split('/').pop() as string
    expect(await page.getByRole('status').textContent()).toMatch(/Connection created/)
    expect(await page.locator('#status').textContent()).toBe('active')
    const shown = await page.locator('#secrets [data-kid]').allTextContents()
    expect(shown).toHaveLength(1)
    expect(shown[0]).toContain(fingerprint(FIRST))
    expect(shown[0]).toMatch(/\(current\)$/)

    const listed = await listedSecrets(connectionId)
    expect(listed).toEqual(shown)
    const row = page.locator(`tr[data-connection-id="${connectionId}"] td`)
    expect((await row.allTextContents()).slice(1, 5)).toEqual(['telegram', BOT, 'active', '1'])
  })

  it('a refused form comes back with its account and its secret input empty, the reason named', async () => {
    await page.goto(`${origin.url}/console/connections/new?channel=telegram`)
    await page.getByLabel('account').fill(BOT)
    await page.getByLabel('secret_token').fill(REFUSED)
    await page.getByRole('button', { name: 'Create' }).click()
    const alert = await page.getByRole('alert').textContent()
    expect(alert).toMatch(/account: .*exists \(connection_exists\)/)
    expect(await page.getByLabel('account').inputValue()).toBe(BOT)
    expect(await page.getByLabel('secret_token').inputValue()).toBe('')

    await page.getByLabel('account').fill('not-a-bot-id')
    await page.getByLabel('secret_token').fill(`${REFUSED} with a space`)
    await page.getByRole('button', { name: 'Create' }).click()
    expect(await page.getByRole('alert').textContent()).toMatch(/connection_invalid/)
    expect(await page.getByLabel('secret_token').inputValue()).toBe('')
  })

  it('rotate: two kids, the new one current, the old one with its notAfter about 24 h ahead', async () => {
    await page.goto(`${origin.url}/console/connections/${connectionId}`)
    await page.getByLabel('new secret_token').fill(SECOND)
    await page.getByRole('button', { name: 'Rotate secret_token' }).click()
    await page.waitForURL(/\?done=rotated$/)
    const shown = await page.locator('#secrets [data-kid]').allTextContents()
    expect(shown).toHaveLength(2)
    const current = shown.find((s) => s.includes(fingerprint(SECOND)))
    const old = shown.find((s) => s.includes(fingerprint(FIRST)))
    expect(current).toMatch(/\(current\)$/)
    const notAfter = /notAfter (\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ)/.exec(old ?? '')?.[1]
    expect(notAfter).toBeDefined()
    const ahead = Date.parse((notAfter as string).replace(' ', 'T')) - Date.now()
    expect(ahead).toBeGreaterThan(23 * 3600_000)
    expect(ahead).toBeLessThanOrEqual(24 * 3600_000)
    expect(await listedSecrets(connectionId)).toEqual(shown)
  })

  it('the edge column: the change waits for KV; the version an event was verified with shows as seen', async () => {
    await page.goto(`${origin.url}/console/connections`)
    const edge = page.locator(`tr[data-connection-id="${connectionId}"] [data-edge]`)
    expect(await edge.textContent()).toMatch(/^change not in KV yet; not seen yet$/)
    // The Worker forwards an event verified with version 2 of the connection: the origin records it.
    const event = await eventFixture({
      channel: 'telegram',
      tenant: BOT,
      messageKey: `${BOT}:chat:1`,
      connection: { id: connectionId, version: 2 },
    })
    expect((await signedPost(origin.url, event, SHARED)).status).toBe(201)
    await page.reload()
    expect(await edge.locator('[data-seen]').textContent()).toMatch(
      /^seen v2 at \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/,
    )
  })

  it('disable: the status says disabled, on its page and in the list, the origin refuses its events; enable brings it back', async () => {
    await page.goto(`${origin.url}/console/connections/${connectionId}`)
    await page.getByRole('button', { name: 'Disable' }).click()
    await page.waitForURL(/\?done=disabled$/)
    expect(await page.locator('#status').textContent()).toBe('disabled')
    await page.goto(`${origin.url}/console/connections?channel=telegram`)
    const status = page.locator(`tr[data-connection-id="${connectionId}"] td[data-status]`)
    expect(await status.textContent()).toBe('disabled')
    // The origin refuses its events at once (the edge's copy may be minutes old).
    const event = await eventFixture({
      channel: 'telegram',
      tenant: BOT,
      messageKey: `${BOT}:chat:2`,
      connection: { id: connectionId, version: 3 },
    })
    expect((await signedPost(origin.url, event, SHARED)).status).toBe(422)
    await page.goto(`${origin.url}/console/connections/${connectionId}`)
    await page.getByRole('button', { name: 'Enable' }).click()
    await page.waitForURL(/\?done=enabled$/)
    expect(await page.locator('#status').textContent()).toBe('active')
  })

  it('a POST without the CSRF token is refused and changes nothing', async () => {
    const res = await page.request.post(
      `${origin.url}/console/connections/${connectionId}/disable`,
      { form: {}, maxRedirects: 0 },
    )
    expect(res.status()).toBe(403)
    await page.goto(`${origin.url}/console/connections/${connectionId}`)
    expect(await page.locator('#status').textContent()).toBe('active')
  })

  it('a viewer is refused every connection page and is not offered the link', async () => {
    const viewer = await chromium.browser.newContext()
    try {
      const p = await viewer.newPage()
      await p.goto(`${origin.url}/console/login`)
      await p.getByLabel('Token').fill(VIEWER)
      await p.getByRole('button', { name: 'Sign in' }).click()
      await p.waitForURL(`${origin.url}/console`)
      expect(await p.getByRole('link', { name: 'Connections' }).count()).toBe(0)
      for (const path of ['', '/new', `/${connectionId}`]) {
        expect((await p.goto(`${origin.url}/console/connections${path}`))?.status()).toBe(403)
      }
    } finally {
      await viewer.close()
    }
  })

  it('delete, confirmed: gone from the list, with the flash', async () => {
    await page.goto(`${origin.url}/console/connections/${connectionId}`)
    await page.getByLabel(/delete this connection/).check()
    await page.getByRole('button', { name: 'Delete' }).click()
    await page.waitForURL(/\/console\/connections\?done=deleted$/)
    expect(await page.getByRole('status').textContent()).toMatch(/deleted/)
    expect(await page.locator(`tr[data-connection-id="${connectionId}"]`).count()).toBe(0)
  })

  it('no secret in any answer the browser got, any origin log line, or any registry row', async () => {
    expect(answers.length).toBeGreaterThan(20)
    expect(logLines.length).toBeGreaterThan(0)
    const pool = databasePool(db.url)
    try {
      const rows = await pool.query<{ dump: string }>(
        `SELECT concat_ws(E'\\n',
           (SELECT string_agg(t::text, E'\\n') FROM connections t),
           (SELECT string_agg(t::text, E'\\n') FROM connection_secrets t),
           (SELECT string_agg(t::text, E'\\n') FROM connection_audit t),
           (SELECT string_agg(t::text, E'\\n') FROM connection_publications t),
           (SELECT string_agg(t::text, E'\\n') FROM console_audit t)) AS dump`,
      )
      const dump = rows.rows[0]?.dump ?? ''
      expect(dump).toContain(fingerprint(SECOND))
      for (const secret of SECRETS) {
        expect(answers.filter((a) => a.includes(secret))).toEqual([])
        expect(logLines.filter((l) => l.includes(secret))).toEqual([])
        expect(dump.includes(secret)).toBe(false)
      }
    } finally {
      await pool.end()
    }
  })
})
