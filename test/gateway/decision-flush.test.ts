/**
 * The Worker's decision counters (worker/decision-counters.ts) against a real HTTP server standing
 * in for the origin: many deliveries, one signed flush per interval (never a subrequest per
 * delivery); a failed flush keeps its counts for the next; off when DECISION_FLUSH_SECONDS is 0.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DecisionBatch } from '../../contract/decision-counts'
import {
  ANSWER_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signAnswer,
  TIMESTAMP_HEADER,
  verifyForward,
} from '../../contract/forward-signature'
import { countDecision, type FlushTarget } from '../../worker/decision-counters'

const SECRET = 'flush-test-secret'
const received: Array<{ path: string; batch: DecisionBatch; signed: boolean }> = []
let status = 200
let server: Server
let url: string

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => {
      body += chunk
    })
    req.on('end', async () => {
      const signature = req.headers[SIGNATURE_HEADER] as string
      const verdict = await verifyForward(
        [SECRET],
        { method: 'POST', path: '/v1/decisions' },
        body,
        {
          timestamp: req.headers[TIMESTAMP_HEADER] as string,
          signature,
        },
      )
      received.push({ path: req.url ?? '', batch: JSON.parse(body), signed: verdict.ok })
      // The origin signs its answers (only a signed answer counts as the origin's).
      const answer = '{"ok":true}'
      res
        .writeHead(status, {
          'content-type': 'application/json',
          [ANSWER_SIGNATURE_HEADER]: await signAnswer(SECRET, signature, status, answer),
        })
        .end(answer)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve))
})

function target(everySeconds: number, pending: Promise<unknown>[]): FlushTarget {
  return {
    origin: { url, secrets: [SECRET] },
    everySeconds,
    waitUntil: (p) => pending.push(p),
  }
}

const total = (batches: DecisionBatch[]) =>
  batches.flatMap((b) => b.rows).reduce((n, row) => n + row.count, 0)

describe('decision counters', () => {
  it('100 deliveries: one signed POST /v1/decisions with all 100 counted', async () => {
    received.length = 0
    const pending: Promise<unknown>[] = []
    for (let i = 0; i < 100; i++) {
      countDecision(target(1, pending), {
        channel: 'slack',
        decision: i === 0 ? 'forwarded' : 'duplicate',
        decidedBy: 'redis',
        deliveryKey: 'dedup:slack:A1:Ev1',
        ms: 4,
      })
    }
    expect(pending).toHaveLength(1) // one scheduled flush, whatever the number of deliveries
    await Promise.all(pending)
    expect(received.map((r) => [r.path, r.signed])).toEqual([['/v1/decisions', true]])
    expect(total(received.map((r) => r.batch))).toBe(100)
  })

  it('a flush the origin refused: the counts go with the next one', async () => {
    received.length = 0
    const pending: Promise<unknown>[] = []
    status = 503
    countDecision(target(1, pending), {
      channel: 'twilio',
      decision: 'rejected',
      decidedBy: 'gateway',
      reason: 'bad_signature',
    })
    await Promise.all(pending)
    status = 200
    countDecision(target(1, pending), {
      channel: 'twilio',
      decision: 'rejected',
      decidedBy: 'gateway',
      reason: 'bad_signature',
    })
    const refused = received.length
    await Promise.all(pending)
    // The refused batch is sent again whole, its id and all (the origin records an id once, so a
    // resend after a timeout is not counted twice), then the new one: each count arrives once.
    const accepted = received.slice(refused).map((r) => r.batch)
    expect(accepted[0]?.id).toBe(received[refused - 1]?.batch.id)
    expect(new Set(accepted.map((b) => b.id)).size).toBe(accepted.length)
    expect(total(accepted)).toBe(2)
  })

  it('DECISION_FLUSH_SECONDS=0: nothing counted, nothing sent', async () => {
    received.length = 0
    const pending: Promise<unknown>[] = []
    countDecision(target(0, pending), {
      channel: 'slack',
      decision: 'forwarded',
      decidedBy: 'redis',
    })
    expect(pending).toHaveLength(0)
    expect(received).toHaveLength(0)
  })
})
