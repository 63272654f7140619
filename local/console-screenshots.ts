/**
 * `npm run console:screenshots`: the console's three main pages as PNGs in docs/images/
 * (console-overview.png, console-lookup.png, console-failures.png), made from a real run: a stack
 * on the local Postgres and Redis (a fresh database, dropped after), signed vendor deliveries
 * (copies, a forged one, several channels), two dead letters, then Debian's Chromium signs in and
 * takes each page. Run it again whenever the pages change.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { signForward } from '../contract/forward-signature'
import { launchChromium } from './chromium'
import { runId } from './services'
import { REPO_ROOT, startStack } from './stack'
import {
  slackDelivery,
  TEST_SECRETS,
  telegramDelivery,
  twilioDelivery,
  vendorBindings,
} from './vendor-deliveries'

const OUT = join(REPO_ROOT, 'docs', 'images')
const TOKEN = `screenshots-${runId()}-operator`

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true })
  const stack = await startStack({
    postgres: 'fresh',
    redis: 'shared',
    keyPrefix: `screenshots:${runId()}:`,
    originSecret: TEST_SECRETS.origin,
    originEnv: { LOG_LEVEL: 'warn', OPERATOR_TOKEN: TOKEN },
    originsUseRedis: true,
    worker: { vars: { ...vendorBindings(), DECISION_FLUSH_SECONDS: '1' }, onLine: () => {} },
  })
  const chromium = await launchChromium()
  try {
    const send = async (request: Request) => (await fetch(request)).arrayBuffer()
    const worker = stack.worker.url
    const slack = slackDelivery({ text: 'Hi, my order #1042 has not arrived' })
    for (let i = 0; i < 3; i++) await send(await slack.request(worker))
    await send(await slackDelivery({ forged: true }).request(worker))
    const sms = twilioDelivery({
      messageSid: 'SM5f1e0c2a9b7d4e3f8a6b1c0d9e8f7a6b',
      body: 'Can I change my delivery address?',
    })
    for (let i = 0; i < 2; i++) await send(await sms.request(worker))
    for (let i = 0; i < 4; i++)
      await send(await telegramDelivery({ text: `question ${i}` }).request(worker))
    await send(await twilioDelivery({ forged: true }).request(worker))
    for (const text of ['a dead letter the origin refused', 'another one']) {
      const event = slackDelivery({ text })
      await recordDead(stack.origin.url, event.deliveryKey)
    }
    await new Promise((r) => setTimeout(r, 2_500)) // one flush of the decision counters

    const page = await (
      await chromium.browser.newContext({ viewport: { width: 1280, height: 860 } })
    ).newPage()
    const base = `${stack.origin.url}/console`
    await page.goto(`${base}/login`)
    await page.getByLabel('Token').fill(TOKEN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(base)
    await page.screenshot({ path: join(OUT, 'console-overview.png'), fullPage: true })
    await page.goto(`${base}/lookup?q=${sms.messageKey.split(':')[1]}`)
    await page.screenshot({ path: join(OUT, 'console-lookup.png'), fullPage: true })
    await page.goto(`${base}/failures`)
    await page.screenshot({ path: join(OUT, 'console-failures.png'), fullPage: true })
    console.log(
      `wrote ${['overview', 'lookup', 'failures'].map((p) => `docs/images/console-${p}.png`).join(', ')}`,
    )
  } finally {
    await chromium.close()
    await stack.stop()
  }
}

/** A dead letter as the Worker's dead-letter consumer reports it (signed like a forward). */
async function recordDead(origin: string, deliveryKey: string): Promise<void> {
  const body = JSON.stringify({
    channel: 'slack',
    deliveryKey,
    event: { channel: 'slack', deliveryKey },
    error: 'origin 503 after 20 attempts',
    attempts: 20,
  })
  const res = await fetch(`${origin}/v1/failures/inbound`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      // Signed for the route it goes to (scheme v2 binds method and path), as the Worker signs.
      ...(await signForward(TEST_SECRETS.origin, body, undefined, {
        method: 'POST',
        path: '/v1/failures/inbound',
      })),
    },
    body,
  })
  if (!res.ok) throw new Error(`recording a dead letter: ${res.status}`)
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
