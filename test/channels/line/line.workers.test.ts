/**
 * The LINE channel through the real Worker routes, inside workerd, with real Redis (the Upstash
 * stand-in), the test origin, and bodies signed the way LINE signs them: the console's Verify,
 * signatures and other bots' requests (nothing written), batches (replayed, partly stored,
 * concurrent copies), a redelivery under a new event id, unsend, the largest body.
 */
import { describe, expect, it } from 'vitest'
import {
  LINE_DESTINATION,
  LINE_TEST_SECRET,
  lineBody,
  lineEventId,
  lineMessageId,
  lineRequest,
  lineText,
  lineUnsend,
} from '../../../local/vendor-deliveries'
import { line, lineSignature } from '../../../worker/channels/line'
import type { Env } from '../../../worker/env'
import { DONE_VALUE } from '../../support/claim-values'
import { GATEWAY, type Harness, harness } from '../../support/workerd/harness'
import { withQueues } from '../../support/workerd/queues'
import { nothingWritten } from '../support/workerd'

const URL_ = `${GATEWAY}/webhooks/line`
const LINE: Partial<Env> = { LINE_CHANNEL_SECRET: LINE_TEST_SECRET }
const OTHER_BOT = 'Ufedcba9876543210fedcba9876543210'
const post = (h: Harness, body: Record<string, unknown> | string, secret?: string) =>
  lineRequest(URL_, body, secret).then((request) => h.deliver(request))

/** Three text events, as one POST, and their delivery keys. */
function three() {
  const ids = [lineEventId(), lineEventId(), lineEventId()]
  const messages = [lineMessageId(), lineMessageId(), lineMessageId()]
  const events = ids.map((id, i) =>
    lineText(messages[i] as string, `text ${i}`, { webhookEventId: id }),
  )
  const keys = ids.map((id) => `dedup:line:${LINE_DESTINATION}:${id}`)
  return { body: lineBody(events), events, keys, messages }
}

describe('LINE: the signature in workerd', () => {
  it('the self-check vector', async () => {
    expect(await lineSignature('secret', 'qwer')).toBe(
      'uHVaInoJKUNRtT2I5yjlh0590mEZ+98eNBhQGXZcjrw=',
    )
  })
})

describe('LINE: verification', () => {
  it("the console's Verify (no events): 200, nothing written", async () => {
    const h = harness(LINE)
    expect((await post(h, lineBody([]))).status).toBe(200)
    await nothingWritten(h)
  })

  it('a bad, missing or tampered x-line-signature is 401 and writes nothing', async () => {
    const h = harness(LINE)
    const { body } = three()
    expect((await post(h, body, 'not-the-channel-secret')).status).toBe(401)
    const unsigned = new Request(URL_, { method: 'POST', body: JSON.stringify(body) })
    expect((await h.deliver(unsigned)).status).toBe(401)
    const good = await lineRequest(URL_, body)
    const tampered = new Request(URL_, {
      method: 'POST',
      headers: good.headers,
      body: (await good.text()).replace('text 0', 'text 9'),
    })
    expect((await h.deliver(tampered)).status).toBe(401)
    await nothingWritten(h)
  })

  it('without a secret: 503 naming the variables, nothing secret', async () => {
    const h = harness({ LINE_CHANNEL_SECRET: '' })
    const response = await post(h, three().body)
    expect(response.status).toBe(503)
    expect(await response.text()).not.toContain(LINE_TEST_SECRET)
  })

  describe('several bots, each its own channel secret', () => {
    const bots = (): Harness =>
      harness({
        LINE_CHANNEL_SECRET: '',
        LINE_CHANNEL_SECRETS_BY_DESTINATION: `${LINE_DESTINATION}=bot-one-new|bot-one-old,${OTHER_BOT}=bot-two`,
      })

    it("each bot's secrets, rotation included, verify its own events", async () => {
      const h = bots()
      const one = lineBody([lineText(lineMessageId(), 'x')])
      expect((await post(h, one, 'bot-one-old')).status).toBe(200)
      const two = lineBody([lineText(lineMessageId(), 'y')], OTHER_BOT)
      expect((await post(h, two, 'bot-two')).status).toBe(200)
      expect((await h.originCalls()).rows).toBe(2)
    })

    it('a body naming another bot than the one whose secret signed it (or an unlisted bot): 401, nothing written', async () => {
      const h = bots()
      const foreign = lineBody([lineText(lineMessageId(), 'x')], OTHER_BOT)
      expect((await post(h, foreign, 'bot-one-new')).status).toBe(401)
      const unlisted = lineBody([lineText(lineMessageId(), 'z')], `U${'9'.repeat(32)}`)
      expect((await post(h, unlisted, 'bot-two')).status).toBe(401)
      expect((await post(h, unlisted, LINE_TEST_SECRET)).status).toBe(401)
      await nothingWritten(h)
    })
  })
})

describe('LINE: batches', () => {
  it('3 events, replayed: 3 rows, the replay answered from Redis', async () => {
    const h = harness(LINE)
    const { body, keys } = three()
    expect((await post(h, body)).status).toBe(200)
    expect((await post(h, body)).status).toBe(200)
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(3)
    expect(calls.map((c) => c.deliveryKey).sort()).toEqual([...keys].sort())
    for (const key of keys) {
      expect(await h.redisGet(key)).toMatch(DONE_VALUE)
      expect(await h.redisTtl(key)).toBeGreaterThan(86_400 - 60)
    }
  })

  it('a batch where one event is already stored adds only the others', async () => {
    const h = harness(LINE)
    const { body, events } = three()
    expect((await post(h, lineBody([events[0]]))).status).toBe(200)
    expect((await post(h, body)).status).toBe(200)
    const { calls, rows } = await h.originCalls()
    expect([calls.length, rows]).toEqual([3, 3])
  })

  it('20 concurrent copies of a two-event batch leave two rows', async () => {
    const h = harness(LINE)
    const body = lineBody([lineText(lineMessageId(), 'a'), lineText(lineMessageId(), 'b')])
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () => (await post(h, body)).status),
    )
    expect(answers.every((s) => s === 200 || s === 503)).toBe(true)
    expect((await post(h, body)).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(2)
  })

  it('a redelivery under a new webhookEventId, or a standby copy: the same message, one row', async () => {
    const h = harness(LINE)
    const id = lineMessageId()
    expect((await post(h, lineBody([lineText(id, 'hi')]))).status).toBe(200)
    const again = lineText(id, 'hi', { redelivery: true })
    const standby = lineText(id, 'hi', { mode: 'standby' })
    expect((await post(h, lineBody([again, standby]))).status).toBe(200)
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(1)
    expect(new Set(calls.map((c) => c.messageKey))).toEqual(new Set([`${LINE_DESTINATION}:${id}`]))
  })

  it('unsend, before and after its message: a delete under the message key', async () => {
    const h = harness(LINE)
    const [before, after] = [lineMessageId(), lineMessageId()]
    const body = lineBody([
      lineUnsend(before),
      lineText(before, 'taken back before it came'),
      lineText(after, 'taken back after'),
      lineUnsend(after),
    ])
    expect((await post(h, body)).status).toBe(200)
    const { calls } = await h.originCalls()
    const byKind = (kind: string) =>
      calls
        .filter((c) => c.kind === kind)
        .map((c) => c.messageKey)
        .sort()
    const keys = [before, after].map((id) => `${LINE_DESTINATION}:${id}`).sort()
    expect(byKind('delete')).toEqual(keys)
    expect(byKind('message')).toEqual(keys)
  })
})

/**
 * LINE resends nothing unless "Webhook redelivery" is on in its console (off by default), so what
 * the gateway can keep it must answer 200: with the origin down a batch is spooled, not 5xx'd; the
 * one 5xx left (the queue refusing as well) is what the README's Routes row and deploying.md
 * tell the operator to turn redelivery on for (test/local/vendor-settings-docs.test.ts checks they
 * do).
 */
describe('LINE: without redelivery every non-2xx is a loss', () => {
  it('the origin down: the batch is queued and answered 200, each event once', async () => {
    const { h, spool } = withQueues(LINE)
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const { body, keys } = three()
    expect((await post(h, body)).status).toBe(200)
    expect(spool.sent.map((m) => m.event.deliveryKey).sort()).toEqual([...keys].sort())
  })

  it('the origin down and the queue refusing: 503, the claims released for a redelivery', async () => {
    const { h } = withQueues(LINE, true)
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const { body, keys } = three()
    expect((await post(h, body)).status).toBe(503)
    for (const key of keys) expect(await h.redisGet(key)).toBeNull()
  })
})

describe('LINE: the largest body', () => {
  /** One text event, its text padded so that the body is exactly `bytes` long. */
  function bodyOf(bytes: number): string {
    const shell = JSON.stringify(lineBody([lineText(lineMessageId(), '')]))
    return shell.replace('"text":""', `"text":"${'x'.repeat(bytes - shell.length)}"`)
  }

  it('its bound, 1 MiB, is taken; a byte more is 413 before anything is verified', async () => {
    const h = harness(LINE)
    const max = line.maxBodyBytes ?? 0
    expect(max).toBe(1024 * 1024)
    const largest = bodyOf(max)
    expect(new TextEncoder().encode(largest).byteLength).toBe(max)
    expect((await post(h, largest)).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(1)
    expect((await post(h, bodyOf(max + 1))).status).toBe(413)
  })
})
