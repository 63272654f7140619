/**
 * `origin/main.ts` as a process (a pod): with GMAIL_* set it polls the (fake) Gmail on its own,
 * shows the poller's counters on /metrics, and stops cleanly; half a Gmail configuration stops it
 * at start-up with the missing variables named.
 */
import { expect, it } from 'vitest'
import { startOrigin } from '../../local/origin-process'
import { runId } from '../../local/services'
import { rawEmail } from '../../local/vendor-deliveries'
import { startFakeGmail } from '../support/fake-gmail'
import { fetchMetrics, TEST_OPERATOR_TOKEN } from '../support/origin'
import { emailTestbedForFile } from './support/testbed'

const bed = emailTestbedForFile()

it('polls Gmail when GMAIL_* are set, and exposes its metrics', async () => {
  const mailbox = `support-${runId()}@inbound.example`
  const gmail = await startFakeGmail({ mailbox })
  const origin = await startOrigin({
    env: {
      LOG_LEVEL: 'warn',
      OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
      ...bed.originEnv(gmail, { pollIntervalMs: 100 }),
    },
  })
  try {
    gmail.deliver(rawEmail({ to: mailbox }))
    const stored = async () =>
      (await bed.messageRows()).filter((r) => r.channel_message_id.startsWith(`${mailbox}:`))
    const metrics = async () => (await fetchMetrics(origin.url)).text()
    // The row is committed before its poll ends and is counted: wait for both.
    const completedPoll = /inbound_gmail_polls_total\{result="completed"\} [1-9]/
    const until = Date.now() + 20_000
    while (Date.now() < until) {
      if ((await stored()).length > 0 && completedPoll.test(await metrics())) break
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(await stored()).toHaveLength(1)
    const text = await metrics()
    expect(text).toMatch(completedPoll)
    expect(text).toMatch(
      /inbound_gmail_messages_ingested_total\{outcome="created",decided_by="postgres"\} 1/,
    )
  } finally {
    expect(await origin.kill('SIGTERM')).toEqual({ code: 0, signal: null })
    await gmail.close()
  }
})

it('refuses to start with half a Gmail configuration, naming what is missing', async () => {
  const env = {
    DATABASE_URL: bed.db.databaseUrl,
    NEON_WS_PROXY: bed.db.wsProxy,
    ORIGIN_SHARED_SECRET: bed.db.secret,
    GMAIL_CLIENT_ID: 'client-only',
  }
  const error = await startOrigin({ env, readyTimeoutMs: 20_000 }).then(
    () => null,
    (err: Error) => err,
  )
  expect(error?.message).toMatch(/exited \(code 2\)/)
  expect(error?.message).toMatch(/GMAIL_CLIENT_SECRET, GMAIL_REFRESH_TOKEN, GMAIL_MAILBOX/)
})
