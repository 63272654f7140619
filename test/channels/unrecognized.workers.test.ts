/**
 * Unrecognized events inside workerd: a verified LINE event this code cannot place is kept as a
 * dead letter (through R2 when large), reported whole by the dead-letter consumer, and never
 * answered "ok" when it is kept nowhere; the Worker's signed replay route classifies a kept event
 * again, with the tenant that verified it, delivers what it places through the delivery core,
 * refuses what it was not signed for, and signs its answer.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { LIMITS } from '../../contract/event'
import {
  ANSWER_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signForward,
  verifyAnswer,
} from '../../contract/forward-signature'
import {
  keptBody,
  UNRECOGNIZED_KIND,
  UNRECOGNIZED_REPLAY_ROUTE,
} from '../../contract/unrecognized-event'
import {
  LINE_DESTINATION,
  LINE_TEST_SECRET,
  lineBody,
  lineEventId,
  lineMessageId,
  lineRequest,
  lineText,
  TEST_SECRETS,
} from '../../local/vendor-deliveries'
import type { Env } from '../../worker/env'
import worker from '../../worker/index'
import type { DeadMessage } from '../../worker/spool/message'
import { GATEWAY, type Harness } from '../support/workerd/harness'
import { RecordingQueue, withQueues } from '../support/workerd/queues'

const lineUrl = `${GATEWAY}/webhooks/line`
const LINE: Partial<Env> = { LINE_CHANNEL_SECRET: LINE_TEST_SECRET }
const SPOOL_DEAD = 'inbound-dedup-spool-dead'

/** An event type LINE may add, carrying `size` characters of its own. */
const novel = (size = 10) => ({
  type: 'greatNewEvent',
  greatNewField: 'x'.repeat(size),
  timestamp: 1_700_000_000_000,
  mode: 'active',
  source: { type: 'user', userId: 'U206d25c2ea6bd87c17655609a1c37cb8' },
  webhookEventId: lineEventId(),
  deliveryContext: { isRedelivery: false },
})

async function consumeDead(h: Harness, body: unknown) {
  const batch = createMessageBatch(SPOOL_DEAD, [
    { id: `msg-${lineEventId()}`, timestamp: new Date(), attempts: 1, body },
  ])
  const ctx = createExecutionContext()
  await worker.queue(batch, h.env, ctx)
  return getQueueResult(batch, ctx)
}

describe('an event this code cannot place', () => {
  it('is answered ok only once its dead letter is sent; large, through R2, reported whole', async () => {
    const { h, dead } = withQueues(LINE)
    const event = novel(150_000)
    const response = await h.deliver(await lineRequest(lineUrl, lineBody([event])))
    expect(response.status).toBe(200)
    expect(response.headers.get('x-dedup-decision')).toBe('unrecognized')
    const [letter] = dead.sent as unknown as [DeadMessage & { eventKey?: string }]
    expect(letter.dead.error).toBe('unrecognized_event: line_type_greatNewEvent')
    expect(letter.event).toBeUndefined()
    expect(letter.eventKey).toMatch(/^spool\//)
    const result = await consumeDead(h, letter)
    expect(result.explicitAcks).toHaveLength(1)
    const [report] = (await h.originCalls()).dead
    const kept = report?.event as Record<string, unknown>
    expect(kept).toMatchObject({
      kind: UNRECOGNIZED_KIND,
      channel: 'line',
      tenant: null,
      encoding: 'text',
    })
    expect(JSON.parse(kept.body as string)).toEqual({
      destination: LINE_DESTINATION,
      events: [event],
    })
    expect(report?.deliveryKey).toMatch(/^dedup:unrecognized:line:-:h[0-9a-f]{32}$/)
    expect((await h.originCalls()).calls).toHaveLength(0)
  })

  it('kept nowhere (over an event, the dead-letter queue refusing): the retry answer, never ok', async () => {
    const { h, dead } = withQueues(LINE)
    const tooLarge = await h.deliver(
      await lineRequest(lineUrl, lineBody([novel(LIMITS.eventBytes)])),
    )
    expect(tooLarge.status).toBe(503)
    expect(dead.sent).toEqual([])
    const refusing = withQueues({
      ...LINE,
      SPOOL_DEAD: new RecordingQueue(true) as unknown as Env['SPOOL_DEAD'],
    })
    const answer = await refusing.h.deliver(await lineRequest(lineUrl, lineBody([novel()])))
    expect(answer.status).toBe(503)
    expect(answer.headers.get('x-dedup-decision')).toBe('retry')
  })
})

/** A kept event, as the origin stores it, for `body` verified for `tenant`. */
function keptEvent(body: unknown, tenant: string | null) {
  return {
    v: 1,
    kind: UNRECOGNIZED_KIND,
    channel: 'line',
    deliveryKey: `dedup:unrecognized:line:-:h${lineEventId()}`,
    reason: 'line_type_messageEdited',
    tenant,
    path: '/webhooks/line',
    contentType: 'application/json',
    ...keptBody(JSON.stringify(body)),
    receivedAt: Date.now(),
  }
}

async function replay(
  h: Harness,
  event: unknown,
  route: { method: string; path: string } = UNRECOGNIZED_REPLAY_ROUTE,
  secret: string = TEST_SECRETS.origin,
) {
  const body = JSON.stringify({ event })
  const headers = await signForward(secret, body, undefined, route)
  const response = await h.deliver(
    new Request(`${GATEWAY}${UNRECOGNIZED_REPLAY_ROUTE.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    }),
  )
  const text = await response.text()
  const signed = await verifyAnswer(
    [TEST_SECRETS.origin],
    headers[SIGNATURE_HEADER] ?? '',
    response.status,
    text,
    response.headers.get(ANSWER_SIGNATURE_HEADER),
  )
  return { status: response.status, signed, answer: text ? JSON.parse(text) : null }
}

describe('POST /internal/unrecognized/replay', () => {
  const edited = (id: string) => ({
    ...lineText(id, 'hello, edited', { timestamp: 1_700_000_005_000 }),
    type: 'messageEdited',
  })

  it('classifies the kept body again and delivers what it places, once; its answer signed', async () => {
    const { h } = withQueues(LINE)
    const id = lineMessageId()
    const event = keptEvent(lineBody([edited(id)]), null)
    const first = await replay(h, event)
    expect(first).toEqual({
      status: 200,
      signed: true,
      answer: { outcome: 'delivered', decisions: ['forwarded'] },
    })
    const again = await replay(h, event)
    expect(again.answer).toEqual({ outcome: 'delivered', decisions: ['duplicate'] })
    // The second a duplicate of Redis's `done`: the origin is called once.
    const { calls } = await h.originCalls()
    expect(calls.map((c) => [c.kind, c.messageKey])).toEqual([
      ['edit', `${LINE_DESTINATION}:${id}`],
    ])
  })

  it('still unrecognized: nothing delivered, the reason said; another tenant named: refused', async () => {
    const { h } = withQueues(LINE)
    const unknown = keptEvent(lineBody([novel()]), null)
    expect((await replay(h, unknown)).answer).toEqual({
      outcome: 'unrecognized',
      decisions: [],
      reason: 'line_type_greatNewEvent',
    })
    const foreign = keptEvent(
      lineBody([edited(lineMessageId())], 'Ufedcba9876543210fedcba9876543210'),
      LINE_DESTINATION,
    )
    expect((await replay(h, foreign)).answer).toMatchObject({
      outcome: 'unrecognized',
      reason: 'unauthorized',
    })
    expect((await h.originCalls()).calls).toHaveLength(0)
  })

  it('refuses a request not signed for this route, or by another secret: 401, nothing classified', async () => {
    const { h } = withQueues(LINE)
    const event = keptEvent(lineBody([edited(lineMessageId())]), null)
    expect((await replay(h, event, { method: 'POST', path: '/v1/events' })).status).toBe(401)
    expect((await replay(h, event, UNRECOGNIZED_REPLAY_ROUTE, 'another-secret')).status).toBe(401)
    expect((await replay(h, { ...event, kind: 'message' })).status).toBe(400)
    expect((await h.originCalls()).calls).toHaveLength(0)
  })
})
