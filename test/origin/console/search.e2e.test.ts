/**
 * Search by content in a real browser (Debian's Chromium through playwright-core) against
 * `npm run origin`, messages stored through the origin's signed `POST /v1/events` as the Worker
 * sends them: the operator types a phrase, gets the matching messages newest first, vendor markup
 * in them stays text (no script runs, no element is made), and a result opens its lookup.
 */
import { randomBytes } from 'node:crypto'
import type { BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, type RunningBrowser } from '../../../local/chromium'
import type { OriginHandle } from '../../../local/origin-process'
import { createTestDatabase, type TestDatabase } from '../../../local/services'
import { eventFixture, signedPost, startOriginPod, TEST_OPERATOR_TOKEN } from '../../support/origin'
import { ConsolePage } from './support/console-page'

const secret = `search-e2e-${randomBytes(8).toString('hex')}`
let db: TestDatabase
let origin: OriginHandle
let chromium: RunningBrowser
let context: BrowserContext
let ui: ConsolePage

beforeAll(async () => {
  ;[db, chromium] = await Promise.all([createTestDatabase(), launchChromium()])
  origin = await startOriginPod(db.url, secret, { OPERATOR_TOKEN: TEST_OPERATOR_TOKEN })
  context = await chromium.browser.newContext()
  ui = new ConsolePage(await context.newPage(), origin.url)
  await ui.signIn(TEST_OPERATOR_TOKEN)
}, 120_000)

afterAll(async () => {
  await context?.close()
  await chromium?.close()
  await origin?.kill('SIGTERM')
  await db?.drop()
})

async function store(body: string): Promise<string> {
  const res = await signedPost(origin.url, await eventFixture({ body }), secret)
  expect(res.status).toBe(201)
  return String(((await res.json()) as { messageId: string }).messageId)
}

describe('search by content in the console', () => {
  it('a phrase finds its messages, newest first; vendor markup in them stays text', async () => {
    const tag = `Refund-${randomBytes(4).toString('hex')}`
    const markup = `<script>window.__xss = 1</script>"><img src=x onerror="window.__xss = 2"> ${tag}`
    const older = await store(`Please process my ${tag.toLowerCase()} today`)
    const newer = await store(markup)
    await store('an unrelated message')

    await ui.page.goto(`${ui.base}/console`)
    await ui.page.getByRole('link', { name: 'Search' }).click()
    await ui.page.getByLabel('Text').fill(tag)
    await ui.page.getByRole('button', { name: 'Search' }).click()
    await ui.page.waitForURL(/\/console\/search\?q=/)

    const rows = ui.page.locator('table.search-results tr[data-message-id]')
    expect(
      await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-message-id'))),
    ).toEqual([newer, older])
    expect(await rows.first().locator('.body').textContent()).toBe(markup)
    expect(
      await ui.page.locator('table.search-results script, table.search-results img').count(),
    ).toBe(0)
    expect(await ui.page.evaluate('window.__xss')).toBeUndefined()

    await rows
      .nth(1)
      .getByRole('link', { name: `#${older}` })
      .click()
    await ui.page.waitForURL(/\/console\/lookup\?q=/)
    expect(await ui.page.locator('.message').getAttribute('data-message-id')).toBe(older)
  })

  it('a phrase nothing holds: said so; two characters: asked for three', async () => {
    await ui.page.goto(`${ui.base}/console/search?q=${randomBytes(8).toString('hex')}`)
    expect(await ui.page.getByText('No message in this range holds that text.').count()).toBe(1)
    await ui.page.goto(`${ui.base}/console/search?q=ab`)
    expect(await ui.page.getByRole('alert').textContent()).toBe('Search for 3 characters or more.')
  })
})
