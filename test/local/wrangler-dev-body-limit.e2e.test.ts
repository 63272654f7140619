/**
 * Under `wrangler dev` (what `npm run dev` runs), a body over the limit is answered 413 and the
 * request after it is served as usual. A cancelled request body made wrangler's proxy answer that
 * next request 503 "Your worker restarted mid-request" (cloudflare/workers-sdk#15709, #15203).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startWorkerDev, type WorkerDevHandle } from '../../local/worker-runtime'

const MAX_BODY_BYTES = 4096
let worker: WorkerDevHandle

beforeAll(async () => {
  worker = await startWorkerDev({
    vars: {
      // Nothing is forwarded: the small request is refused at its signature.
      ORIGIN_URL: 'http://127.0.0.1:9',
      ORIGIN_SHARED_SECRET: 'wrangler-dev-body-limit-origin-secret',
      SLACK_SIGNING_SECRET: 'wrangler-dev-body-limit-slack-secret',
      MAX_BODY_BYTES: String(MAX_BODY_BYTES),
    },
  })
}, 120_000)

afterAll(async () => {
  await worker?.stop()
})

const post = (body: string) =>
  fetch(`${worker.url}/webhooks/slack`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(20_000),
  })

describe('wrangler dev after a 413', () => {
  it('the next request is answered by the Worker, three times over', async () => {
    for (const size of [MAX_BODY_BYTES + 1, 10 * MAX_BODY_BYTES, 2 * 1024 * 1024]) {
      const tooLarge = await post('a'.repeat(size))
      expect(tooLarge.status).toBe(413)
      expect(await tooLarge.json()).toMatchObject({ error: { code: 'body_too_large' } })
      const next = await post('{}')
      // Unsigned: the Worker's own 401, not wrangler's 503.
      expect(next.status).toBe(401)
      expect(await next.text()).not.toContain('restarted mid-request')
    }
  })
})
