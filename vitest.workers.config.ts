import { cloudflareTest } from '@cloudflare/vitest-pool-workers'
import { defineConfig } from 'vitest/config'
import { wranglerConfigWithoutDevVars } from './local/wrangler-no-dev-vars'
import { holdBackExpectedNotices } from './test/support/workerd/workerd-notices'

/**
 * Tests that run inside workerd (the Workers runtime) with the real Worker module, every
 * `test/**\/*.workers.test.ts` beside its subject's Node tests: its routes, the vendor vectors
 * again in that runtime, and the claim protocol against real Redis through the Upstash stand-in.
 * The global setup (test/support/workerd/) starts the Node-side servers and hands their URLs over.
 */
/**
 * The secrets the test fixtures sign with (TEST_SECRETS of local/vendor-deliveries.ts; written out
 * here because the config loader should not import the Worker's modules). A drift fails every
 * signed-request test.
 */
const TEST_SECRETS = {
  slack: 'test-slack-signing-secret',
  twilio: 'test-twilio-auth-token',
  telegram: 'test-telegram-secret-token',
  telegramBotId: '424242',
  origin: 'test-origin-shared-secret',
}

// workerd's notices of the connections these tests refuse on purpose (dead Redis and origin URLs).
const heldBack = holdBackExpectedNotices()
process.on('exit', () => {
  if (heldBack() > 0) {
    process.stdout.write(
      `workerd: ${heldBack()} notices of connections refused on purpose held back (test/support/workerd/workerd-notices.ts)\n`,
    )
  }
})

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      main: './worker/index.ts',
      // wrangler.toml, read where no developer's .dev.vars adds bindings to the tests': its KV
      // namespace CONNECTIONS too (local, empty at each test's start; the tests put records in).
      wrangler: { configPath: wranglerConfigWithoutDevVars() },
      miniflare: {
        bindings: {
          SLACK_SIGNING_SECRET: TEST_SECRETS.slack,
          TWILIO_AUTH_TOKEN: TEST_SECRETS.twilio,
          TELEGRAM_SECRET_TOKEN: TEST_SECRETS.telegram,
          TELEGRAM_BOT_ID: TEST_SECRETS.telegramBotId,
          ORIGIN_SHARED_SECRET: TEST_SECRETS.origin,
          ORIGIN_URL: `${inject('originUrl')}/ns/self`,
          UPSTASH_REDIS_REST_URL: inject('redisUrl'),
          UPSTASH_REDIS_REST_TOKEN: inject('redisToken'),
          REDIS_KEY_PREFIX: `${inject('keyPrefix')}self:`,
          // Off: a flush waits in waitUntil, and every test here waits for the execution context.
          // The counters are tested in Node (test/gateway/decision-flush.test.ts) and through
          // Miniflare end to end (test/origin/console/console.e2e.test.ts).
          DECISION_FLUSH_SECONDS: '0',
        },
      },
    })),
  ],
  test: {
    include: ['test/**/*.workers.test.ts'],
    globalSetup: ['test/support/workerd/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
    // Decision logs only for tests that fail.
    silent: 'passed-only',
  },
})
