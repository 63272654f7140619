/**
 * The benchmark's traffic: distinct vendor events (Slack, Twilio WhatsApp, Telegram in turn), each
 * signed the way the vendor signs it (local/vendor-deliveries.ts, with the bench's secrets).
 * Everything is built and signed before a step starts, so no signing cost sits in the measured
 * client loop.
 *
 * A replay is the same event again: the same body for Twilio and Telegram (their signatures do not
 * change), the same body with a fresh timestamp and signature for Slack (as Slack's retries carry).
 * @module
 */

import { finalizeEvent, type InboundEvent } from '../contract/event'
import { signForward } from '../contract/forward-signature'
import {
  nowSeconds,
  type SignedDelivery,
  slackDelivery,
  telegramDelivery,
  twilioDelivery,
} from '../local/vendor-deliveries'
import type { RawBody } from '../shared/body'
import { utf8 } from '../shared/crypto'
import { classifySlack, parseSlack } from '../worker/channels/slack'
import { classifyTelegram, parseTelegram } from '../worker/channels/telegram'
import { classifyTwilio, parseTwilio } from '../worker/channels/twilio'
import type { ChannelDelivery } from '../worker/channels/types'
import { BENCH_SECRETS } from './config'

export type Vendor = 'slack' | 'twilio' | 'telegram'

/** One logical vendor delivery, before signing. */
export interface VendorEvent {
  vendor: Vendor
  /** `messages.channel` of the row it becomes. */
  channel: 'slack' | 'whatsapp' | 'telegram'
  /** `messages.channel_message_id` of the row it becomes. */
  messageKey: string
  delivery: SignedDelivery
}

/** An HTTP request as the load generator sends it. */
export interface WireRequest {
  method: 'POST'
  path: string
  headers: Record<string, string>
  body: string
}

const VENDORS: readonly Vendor[] = ['slack', 'twilio', 'telegram']
const SLACK_TEAM = 'T0BENCH'
const SLACK_APP = 'A0BENCH'
const SLACK_CHANNEL = 'C0BENCH'
const TWILIO_ACCOUNT = `AC${'0b'.repeat(16)}`
/** Distinct senders: enough that concurrent events rarely share a customer row. */
const SENDERS = 2_000

/** Makes distinct events, the vendors in turn; ids are unique within a run (the tag) and a step. */
export class EventFactory {
  private seq = 0
  private readonly baseSeconds = nowSeconds()
  private readonly updateBase = nowSeconds() * 1_000

  constructor(private readonly runTag: string) {}

  fresh(count: number): VendorEvent[] {
    return Array.from({ length: count }, () => this.next())
  }

  /** Slack events only (a Slack backfill). */
  freshSlack(count: number): VendorEvent[] {
    return Array.from({ length: count }, () => this.slack(this.seq++))
  }

  next(): VendorEvent {
    const seq = this.seq++
    const vendor = VENDORS[seq % VENDORS.length] as Vendor
    if (vendor === 'slack') return this.slack(seq)
    if (vendor === 'twilio') return this.twilio(seq)
    return this.telegram(seq)
  }

  private slack(seq: number): VendorEvent {
    const delivery = slackDelivery({
      team: SLACK_TEAM,
      appId: SLACK_APP,
      channel: SLACK_CHANNEL,
      eventId: `Ev${this.runTag}${seq.toString(36)}`,
      // ts must be unique per message: the run's start second, seq as the microseconds.
      ts: `${this.baseSeconds}.${String(seq % 1_000_000).padStart(6, '0')}`,
      user: `U${seq % SENDERS}`,
      text: text(seq),
      secret: BENCH_SECRETS.slack,
    })
    return { vendor: 'slack', channel: 'slack', messageKey: delivery.messageKey, delivery }
  }

  private twilio(seq: number): VendorEvent {
    const delivery = twilioDelivery({
      accountSid: TWILIO_ACCOUNT,
      from: `whatsapp:+1415${String(seq % SENDERS).padStart(7, '0')}`,
      to: 'whatsapp:+14155550199',
      body: text(seq),
      secret: BENCH_SECRETS.twilio,
    })
    return { vendor: 'twilio', channel: 'whatsapp', messageKey: delivery.messageKey, delivery }
  }

  private telegram(seq: number): VendorEvent {
    const delivery = telegramDelivery({
      updateId: this.updateBase + seq,
      chatId: 10_000_000 + (seq % SENDERS),
      messageId: seq,
      date: this.baseSeconds,
      text: text(seq),
      secret: BENCH_SECRETS.telegram,
      botId: BENCH_SECRETS.telegramBotId,
    })
    return { vendor: 'telegram', channel: 'telegram', messageKey: delivery.messageKey, delivery }
  }
}

const text = (seq: number) => `bench message ${seq}: the quick brown fox jumps over the lazy dog`

/**
 * The vendor's request for this event, signed now (Slack's window is 5 minutes from now). Built
 * for the public URL, which Twilio signs (PUBLIC_BASE_URL is set on every bench worker): one
 * pre-signed request is valid on every worker, whatever port it listens on.
 */
export async function signVendorRequest(event: VendorEvent): Promise<WireRequest> {
  const request = await event.delivery.request(BENCH_SECRETS.publicBaseUrl)
  return {
    method: 'POST',
    path: new URL(request.url).pathname,
    headers: Object.fromEntries(request.headers),
    body: await request.text(),
  }
}

export function signVendorRequests(events: readonly VendorEvent[]): Promise<WireRequest[]> {
  return Promise.all(events.map(signVendorRequest))
}

/**
 * The normalized event the gateway would forward for this delivery, made by the gateway's own
 * parse and classify code, so the origin baseline sees exactly what the worker sends it.
 */
export async function inboundEventOf(event: VendorEvent): Promise<InboundEvent> {
  const wire = await signVendorRequest(event)
  const raw: RawBody = { bytes: utf8(wire.body), text: wire.body }
  let delivery: ChannelDelivery
  if (event.vendor === 'slack') {
    const classified = await classifySlack(parseSlack(raw, wire.headers['content-type'] ?? ''))
    if (classified.action === 'challenge') throw new Error('bench slack event read as a challenge')
    delivery = classified
  } else if (event.vendor === 'twilio') {
    delivery = await classifyTwilio(parseTwilio(raw, `${BENCH_SECRETS.publicBaseUrl}${wire.path}`))
  } else {
    delivery = await classifyTelegram(parseTelegram(raw), BENCH_SECRETS.telegramBotId)
  }
  if (delivery.action !== 'forward')
    throw new Error(`bench event not forwarded: ${delivery.action}`)
  return finalizeEvent(delivery.draft)
}

/** `POST /v1/events` to the origin, signed like the gateway signs it. */
export async function signOriginRequest(event: VendorEvent): Promise<WireRequest> {
  const body = JSON.stringify(await inboundEventOf(event))
  return {
    method: 'POST',
    path: '/v1/events',
    headers: {
      'content-type': 'application/json',
      ...(await signForward(BENCH_SECRETS.origin, body)),
    },
    body,
  }
}

export function signOriginRequests(events: readonly VendorEvent[]): Promise<WireRequest[]> {
  return Promise.all(events.map(signOriginRequest))
}

/** `count` requests cycling over `events` (replays), each freshly signed. */
export function replays(events: readonly VendorEvent[], count: number): VendorEvent[] {
  if (events.length === 0) throw new Error('no events to replay')
  return Array.from({ length: count }, (_, i) => events[i % events.length] as VendorEvent)
}

/** 1 new : `ratio` replays, interleaved: n n r r r r r r r n ... (new events from `factory`). */
export function mixed(
  factory: EventFactory,
  seen: readonly VendorEvent[],
  count: number,
  ratio: number,
): { events: VendorEvent[]; fresh: Set<number> } {
  const events: VendorEvent[] = []
  const fresh = new Set<number>()
  let replay = 0
  for (let i = 0; i < count; i++) {
    if (i % (ratio + 1) === 0) {
      fresh.add(i)
      events.push(factory.next())
    } else {
      events.push(seen[replay++ % seen.length] as VendorEvent)
    }
  }
  return { events, fresh }
}

/** `count` Upstash REST commands as the Worker's claim sends them (SET NX PX GET), distinct keys. */
export function upstashRequests(prefix: string, count: number): WireRequest[] {
  return Array.from({ length: count }, (_, i) => ({
    method: 'POST' as const,
    path: '/',
    headers: {
      authorization: `Bearer ${BENCH_SECRETS.upstash}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify([
      'set',
      `${prefix}sb:${i}`,
      'inflight|0123456789abcdef|0123456789abcdef',
      'nx',
      'px',
      '60000',
      'get',
    ]),
  }))
}
