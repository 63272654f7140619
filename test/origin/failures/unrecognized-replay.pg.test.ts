/**
 * The origin's side of an unrecognized event's replay (origin/failures/unrecognized.ts), against
 * real Postgres and a stand-in for the Worker's route that checks the origin's signature as the
 * Worker does: the row is resolved only on the Worker's signed `delivered`; an answer it did not
 * sign, or `unrecognized`, leaves the row dead; without GATEWAY_URL the replay is refused, saying
 * so. (The Worker's side: test/channels/unrecognized.workers.test.ts; both through the whole stack:
 * test/channels/line/line.e2e.test.ts.)
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ANSWER_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signAnswer,
  TIMESTAMP_HEADER,
  verifyForward,
} from '../../../contract/forward-signature'
import {
  keptBody,
  UNRECOGNIZED_KIND,
  UNRECOGNIZED_REPLAY_ROUTE,
} from '../../../contract/unrecognized-event'
import { NO_GATEWAY } from '../../../origin/failures/unrecognized'
import {
  type OriginTestbed,
  runFailuresCli,
  signedPost,
  startOriginTestbed,
  TEST_OPERATOR_TOKEN,
} from '../../support/origin'

const SECRET = `test-secret-${crypto.randomUUID()}`
type Mode = 'delivered' | 'unrecognized' | 'unsigned'
let mode: Mode = 'delivered'
let worker: Server
let workerUrl: string
let tb: OriginTestbed
const seen: string[] = []

beforeAll(async () => {
  worker = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const signature = String(req.headers[SIGNATURE_HEADER] ?? '')
      const verdict = await verifyForward([SECRET], UNRECOGNIZED_REPLAY_ROUTE, body, {
        timestamp: String(req.headers[TIMESTAMP_HEADER] ?? ''),
        signature,
      })
      seen.push(`${req.method} ${req.url} ${verdict.ok ? 'signed' : 'refused'}`)
      if (!verdict.ok || req.url !== UNRECOGNIZED_REPLAY_ROUTE.path) {
        res.writeHead(401).end()
        return
      }
      const answer = JSON.stringify(
        mode === 'unrecognized'
          ? { outcome: 'unrecognized', decisions: [], reason: 'line_type_greatNewEvent' }
          : { outcome: 'delivered', decisions: ['forwarded'] },
      )
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (mode !== 'unsigned') {
        headers[ANSWER_SIGNATURE_HEADER] = await signAnswer(SECRET, signature, 200, answer)
      }
      res.writeHead(200, headers).end(answer)
    })
  })
  await new Promise<void>((resolve) => worker.listen(0, '127.0.0.1', resolve))
  workerUrl = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`
  tb = await startOriginTestbed({ secret: SECRET, config: { gatewayUrl: workerUrl } })
}, 60_000)

afterAll(async () => {
  await tb?.close()
  await new Promise((resolve) => worker?.close(resolve))
})

/** An unrecognized event's dead letter as the Worker's dead-letter consumer reports it. */
async function keptFailure(): Promise<string> {
  const deliveryKey = `dedup:unrecognized:line:-:h${crypto.randomUUID().replaceAll('-', '')}`
  const event = {
    ...{ v: 1, kind: UNRECOGNIZED_KIND, channel: 'line', deliveryKey, reason: 'line_type_x' },
    ...{ tenant: null, path: '/webhooks/line', contentType: 'application/json' },
    ...keptBody('{"destination":"U1","events":[{"type":"x"}]}'),
    receivedAt: Date.now(),
  }
  const report = {
    channel: 'line',
    deliveryKey,
    event,
    error: 'unrecognized_event: line_type_x',
    attempts: 1,
  }
  const answer = await signedPost(
    `${tb.origin.url}/v1/failures/inbound`,
    JSON.stringify(report),
    SECRET,
  )
  expect(answer.status).toBe(201)
  return ((await answer.json()) as { failureId: string }).failureId
}

const status = async (id: string) =>
  (
    await tb.sql.query<{ status: string }>('SELECT status FROM channel_failures WHERE id = $1', [
      id,
    ])
  ).rows[0]?.status

const replay = (id: string) =>
  fetch(`${tb.origin.url}/v1/failures/inbound/${id}/replay`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TEST_OPERATOR_TOKEN}`,
      'idempotency-key': `"${crypto.randomUUID()}"`,
    },
  })

describe('the replay of an unrecognized event, through the Worker', () => {
  it("resolves the row only on the Worker's signed `delivered`", async () => {
    const id = await keptFailure()
    mode = 'unsigned'
    const unsigned = await replay(id)
    expect(unsigned.status).toBe(503)
    expect(await status(id)).toBe('dead')
    mode = 'unrecognized'
    const still = await replay(id)
    expect(still.status).toBe(400)
    expect(await status(id)).toBe('dead')
    mode = 'delivered'
    const done = await replay(id)
    expect(done.status).toBe(200)
    expect(await done.json()).toEqual({
      failureId: id,
      replay: 'resolved',
      decisions: ['forwarded'],
    })
    expect(await status(id)).toBe('resolved')
    // Every call was signed for the Worker's route, and only for it.
    expect(new Set(seen)).toEqual(new Set([`POST ${UNRECOGNIZED_REPLAY_ROUTE.path} signed`]))
  })

  it('npm run failures: through the Worker with GATEWAY_URL; without it, refused saying so', async () => {
    const id = await keptFailure()
    mode = 'unrecognized'
    const withGateway = await runFailuresCli(tb, ['replay', id], {
      GATEWAY_URL: workerUrl,
      ORIGIN_SHARED_SECRET: SECRET,
      DOWNSTREAM_URL: '',
    })
    expect(withGateway.stderr).toContain('still unrecognized (line_type_greatNewEvent)')
    const without = await runFailuresCli(tb, ['replay', id], {
      GATEWAY_URL: '',
      DOWNSTREAM_URL: '',
    })
    expect(without.code).not.toBe(0)
    expect(without.stderr).toContain(NO_GATEWAY)
    expect(await status(id)).toBe('dead')
  })
})
