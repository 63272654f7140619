/**
 * Property: the keys (and the payload hash) of a delivery do not depend on how the vendor happened
 * to serialize it: JSON key order, form parameter order, header name case.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { finalizeEvent } from '../../contract/event'
import {
  nowSeconds,
  partsOf,
  slackMessageEvent,
  slackRequest,
  TEST_SECRETS,
  telegramRequest,
  telegramUpdate,
  twilioParams,
  twilioRequest,
} from '../../local/vendor-deliveries'
import { classifySlack, parseSlack, verifySlack } from '../../worker/channels/slack'
import { classifyTelegram, parseTelegram } from '../../worker/channels/telegram'
import { verifyTelegram } from '../../worker/channels/telegram-verify'
import { classifyTwilio, parseTwilio, verifyTwilio } from '../../worker/channels/twilio'
import type { Delivery } from '../../worker/channels/types'
import { formatDeliveryKey } from '../../worker/channels/types'

/** Randomness for one serialization: a permutation source and a header-case source. */
const shape = fc.record({
  order: fc.array(fc.nat(), { minLength: 32, maxLength: 32 }),
  upper: fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
})
type Shape = { order: number[]; upper: boolean[] }

function permute<T>(items: T[], order: number[], salt = 0): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = (order[(i + salt) % order.length] ?? 0) % (i + 1)
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

/** The same JSON value with every object's keys in another order. */
function reorder(value: unknown, order: number[], depth = 0): unknown {
  if (Array.isArray(value)) return value.map((v) => reorder(v, order, depth + 1))
  if (typeof value !== 'object' || value === null) return value
  const entries = permute(Object.entries(value), order, depth)
  return Object.fromEntries(entries.map(([k, v]) => [k, reorder(v, order, depth + 1)]))
}

function recase(name: string, upper: boolean[]): string {
  return [...name]
    .map((ch, i) => (upper[i % upper.length] ? ch.toUpperCase() : ch.toLowerCase()))
    .join('')
}

/** Rebuilds a request with header names in another case (fetch Headers fold them: prove it). */
function withHeaderCase(request: Request, body: string, upper: boolean[]): Request {
  const headers: Array<[string, string]> = []
  request.headers.forEach((value, name) => {
    headers.push([recase(name, upper), value])
  })
  return new Request(request.url, { method: 'POST', headers, body })
}

async function keysOf(delivery: Delivery) {
  if (delivery.action !== 'forward') return { action: delivery.action }
  const event = await finalizeEvent(delivery.draft)
  return {
    deliveryKey: formatDeliveryKey(delivery.key),
    messageKey: event.messageKey,
    payloadHash: event.payloadHash,
  }
}

const id = fc.stringMatching(/^[A-Z0-9]{6,12}$/)
const text = fc.string({ maxLength: 40 })

describe('key extraction is stable under serialization', () => {
  it('Slack: JSON key order and header case', async () => {
    await fc.assert(
      fc.asyncProperty(
        id,
        id,
        fc.integer({ min: 1, max: 2_000_000_000 }),
        text,
        shape,
        async (eventId, channel, ts, body, s: Shape) => {
          const payload = slackMessageEvent({
            eventId: `Ev${eventId}`,
            channel: `C${channel}`,
            ts: `${ts}.000100`,
            text: body,
          })
          const run = async (value: unknown, upper: boolean[]) => {
            const raw = JSON.stringify(value)
            const signed = await slackRequest('https://g.example/webhooks/slack', raw)
            const request = withHeaderCase(signed, raw, upper)
            const parts = await partsOf(request)
            expect(await verifySlack(parts, [TEST_SECRETS.slack], { nowSeconds })).toEqual({
              ok: true,
            })
            return keysOf(
              await classifySlack(parseSlack(parts.body, request.headers.get('Content-Type'))),
            )
          }
          const canonical = await run(payload, [])
          expect(canonical).toHaveProperty('messageKey')
          expect(await run(reorder(payload, s.order), s.upper)).toEqual(canonical)
        },
      ),
      { numRuns: 60 },
    )
  })

  it('Twilio: form parameter order and header case', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.stringMatching(/^[0-9a-f]{32}$/),
        text,
        fc.boolean(),
        shape,
        async (sid, body, whatsapp, s: Shape) => {
          const params = twilioParams({
            messageSid: `SM${sid}`,
            body,
            from: whatsapp ? 'whatsapp:+14017122661' : '+14017122661',
          })
          const clock = { nowSeconds: () => 1_700_000_000 }
          const run = async (ordered: Array<[string, string]>, upper: boolean[]) => {
            const signed = await twilioRequest('https://g.example/webhooks/twilio', ordered)
            const raw = new URLSearchParams(ordered).toString()
            const parts = await partsOf(withHeaderCase(signed, raw, upper))
            expect(await verifyTwilio(parts, [TEST_SECRETS.twilio])).toEqual({ ok: true })
            return keysOf(await classifyTwilio(parseTwilio(parts.body, parts.url), clock))
          }
          const canonical = await run(params, [])
          expect(await run(permute(params, s.order), s.upper)).toEqual(canonical)
        },
      ),
      { numRuns: 60 },
    )
  })

  it('Telegram: JSON key order and header case', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: 2 ** 31 }),
        fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
        fc.integer({ min: 1, max: 2 ** 30 }),
        text,
        shape,
        async (updateId, chatId, messageId, body, s: Shape) => {
          const update = telegramUpdate({ updateId, chatId, messageId, text: body })
          const run = async (value: unknown, upper: boolean[]) => {
            const raw = JSON.stringify(value)
            const parts = await partsOf(
              withHeaderCase(
                telegramRequest('https://g.example/webhooks/telegram', raw),
                raw,
                upper,
              ),
            )
            expect(await verifyTelegram(parts, [TEST_SECRETS.telegram])).toEqual({ ok: true })
            return keysOf(
              await classifyTelegram(parseTelegram(parts.body), TEST_SECRETS.telegramBotId),
            )
          }
          const canonical = await run(update, [])
          expect(await run(reorder(update, s.order), s.upper)).toEqual(canonical)
        },
      ),
      { numRuns: 60 },
    )
  })
})
