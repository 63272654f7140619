/**
 * Single sign-on for the console, in a real browser (Debian's Chromium through playwright-core)
 * against `npm run origin` configured only with CONSOLE_ACCESS_* (no token at all) and a Cloudflare
 * Access team served on this machine (test/origin/console/support/access-team.ts). The browser
 * sends `Cf-Access-Jwt-Assertion` on every request, as Access does in front of the origin: a valid
 * assertion signs the person in on the first page, their replay is audited under their email, a
 * viewer may not replay; a wrong audience, an expired assertion, a foreign key or a wrong issuer
 * leave the browser on the sign-in page with the reason, and no session.
 */
import { randomBytes } from 'node:crypto'
import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, type RunningBrowser } from '../../../local/chromium'
import type { OriginHandle } from '../../../local/origin-process'
import { createTestDatabase, databasePool, type TestDatabase } from '../../../local/services'
import { eventFixture, signedPost, startOriginPod } from '../../support/origin'
import {
  type AccessTeam,
  type AssertionOptions,
  startAccessTeam,
  TEST_AUD,
} from './support/access-team'

const secret = `access-e2e-${randomBytes(8).toString('hex')}`
let db: TestDatabase
let team: AccessTeam
let origin: OriginHandle
let chromium: RunningBrowser
const contexts: BrowserContext[] = []

beforeAll(async () => {
  ;[db, team, chromium] = await Promise.all([
    createTestDatabase(),
    startAccessTeam(),
    launchChromium(),
  ])
  origin = await startOriginPod(db.url, secret, {
    CONSOLE_ACCESS_TEAM_DOMAIN: team.teamDomain,
    CONSOLE_ACCESS_AUD: TEST_AUD,
    CONSOLE_ACCESS_OPERATORS: 'ada@customer-support.example',
    CONSOLE_ACCESS_VIEWERS: '@customer-support.example',
  })
}, 120_000)

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => {})
  await chromium?.close()
  await origin?.kill('SIGTERM')
  await team?.close()
  await db?.drop()
})

/** A browser whose every request carries this assertion, as Cloudflare Access adds it. */
async function throughAccess(options: AssertionOptions) {
  const context = await chromium.browser.newContext({
    extraHTTPHeaders: { 'cf-access-jwt-assertion': await team.assertion(options) },
  })
  contexts.push(context)
  return { context, page: await context.newPage() }
}

async function deadFailure(): Promise<string> {
  const event = await eventFixture()
  const report = {
    channel: 'slack',
    deliveryKey: event.deliveryKey,
    event,
    error: 'origin 503',
    attempts: 2,
  }
  const res = await signedPost(`${origin.url}/v1/failures/inbound`, JSON.stringify(report), secret)
  expect(res.status).toBe(201)
  return String(((await res.json()) as { failureId: string }).failureId)
}

describe('the console behind Cloudflare Access', () => {
  it('an operator opens the console: signed in as their email; their replay is audited under it', async () => {
    const id = await deadFailure()
    const { context, page } = await throughAccess({ email: 'ada@customer-support.example' })
    await page.goto(`${origin.url}/console`)
    expect(new URL(page.url()).pathname).toBe('/console')
    expect(await page.getByRole('heading', { name: 'Overview' }).count()).toBe(1)
    expect(await page.content()).toContain('ada@customer-support.example (operator)')
    const cookie = (await context.cookies()).find((c) => c.name === 'console_session')
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' })

    await page.goto(`${origin.url}/console/failures?status=dead`)
    const row = page
      .locator('tr', { hasText: `${id}` })
      .filter({ has: page.getByRole('button', { name: 'Replay' }) })
    await row.first().getByRole('button', { name: 'Replay' }).click()
    await page.waitForURL(/replayed=/)
    const sql = databasePool(db.url)
    try {
      const { rows } = await sql.query<{ actor: string; action: string }>(
        `SELECT actor, action FROM console_audit WHERE target IN ('console', $1) ORDER BY id`,
        [`failure ${id}`],
      )
      expect(rows).toEqual([
        { actor: 'ada@customer-support.example', action: 'sign_in' },
        { actor: 'ada@customer-support.example', action: 'replay' },
      ])
    } finally {
      await sql.end()
    }
  })

  it('a viewer of the domain reads, but may not replay', async () => {
    const id = await deadFailure()
    const { page } = await throughAccess({ email: 'vera@customer-support.example' })
    await page.goto(`${origin.url}/console/failures?status=dead`)
    expect(await page.content()).toContain('vera@customer-support.example (viewer)')
    const csrf = await page.locator('input[name="_csrf"]').first().getAttribute('value')
    const replay = await page.request.post(`${origin.url}/console/failures/${id}/replay`, {
      form: { _csrf: csrf ?? '' },
      maxRedirects: 0,
    })
    expect(replay.status()).toBe(403)
  })

  it.each<[string, AssertionOptions]>([
    ['a wrong audience', { aud: 'the-aud-of-another-application' }],
    ['an expired assertion', { expiresIn: -120 }],
    ['a foreign key', { foreignKey: true }],
    ['a wrong issuer', { iss: 'https://attacker.cloudflareaccess.com' }],
  ])('%s: the sign-in page says so, and no session', async (_, options) => {
    const { context, page } = await throughAccess({
      email: 'ada@customer-support.example',
      ...options,
    })
    const res = await page.goto(`${origin.url}/console`)
    expect(res?.status()).toBe(401)
    expect(await page.getByRole('alert').textContent()).toMatch(/Access assertion does not sign in/)
    expect((await context.cookies()).find((c) => c.name === 'console_session')).toBeUndefined()
    expect(await page.getByRole('heading', { name: 'Overview' }).count()).toBe(0)
  })
})
