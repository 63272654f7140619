/**
 * The vendors, as the gateway meets them: real signed requests (local/vendor-deliveries.ts), sent
 * with each vendor's documented retry behaviour, its delays compressed (about one real minute to
 * one test second) while the answer deadlines stay real, because the Worker's budgets are real:
 *
 * - Slack: waits 3 s for a 2xx; on anything else (or no answer) retries nearly at once, after
 *   1 min and after 5 min, then gives up; `x-slack-no-retry: 1` on an answer stops it.
 * - Twilio (WhatsApp / SMS): one request, 15 s. No retry on 4xx/5xx; one retry only when the
 *   connection could not be made (default `rc=1, rp=ct`).
 * - Telegram: repeats any non-2xx answer "a reasonable number of attempts", backing off.
 * - Meta (WhatsApp Cloud API, Messenger, Instagram): one POST carries a batch of messages;
 *   anything but 200 is retried "with decreasing frequency" (WhatsApp: up to 7 days, Messenger
 *   and Instagram: 36 hours), the whole POST again. Messenger and Instagram messages go one per POST.
 * - LINE: with redelivery on (opt-in), a failed POST is sent again; its schedule is undocumented,
 *   modelled as Meta's. One message per POST.
 * - WeChat: waits 5 s, then tries again, 3 attempts in all; taken as the same on any non-2xx
 *   (WeChat documents only the timeout). Each attempt signed anew; half the messages go to the
 *   encrypting test account.
 * - Microsoft Teams (Bot Framework): resends an activity it got no answer for within ~15 s, and
 *   again ~30 s later (observed, not documented: no horizon is published).
 * - Email (Cloudflare Email Routing, via Miniflare's `/cdn-cgi/handler/email`): a thrown handler
 *   is a temporary SMTP failure (500 here) and the sending MTA retries with backoff; a
 *   `setReject` (400 here) is a bounce, never retried.
 * - Our own API client (POST /v1/messages, docs/api.md): one Idempotency-Key per message, the
 *   same on every retry; retries a timeout, a lost connection, a 5xx and a 409 (after its
 *   Retry-After), with exponential backoff and jitter; a 202 (queued) is taken.
 *
 * Every logical message carries a unique marker at the start of its text; rows are found by it,
 * not by the key the gateway computed, so a row filed under a wrong key still counts.
 * @module
 */
import { delay } from '../../../local/processes'
import {
  apiDelivery,
  emailRequest,
  lineDelivery,
  MAILBOX,
  messagingDelivery,
  rawEmail,
  type SignedDelivery,
  slackDelivery,
  teamsDelivery,
  telegramDelivery,
  twilioDelivery,
  WECHAT_AES_ACCOUNT,
  WECHAT_TEST_AES_KEY,
  waText,
  wechatDelivery,
  wechatMsgId,
  whatsappCloudPost,
} from '../../../local/vendor-deliveries'
import { senderKeyPart } from '../../email/support/emails'

/** The `messages.channel` a delivery should end up in. */
export type Channel =
  | 'slack'
  | 'whatsapp'
  | 'sms'
  | 'telegram'
  | 'email'
  | 'line'
  | 'messenger'
  | 'instagram'
  | 'wechat'
  | 'teams'
  | 'api'
export const CHANNELS: readonly Channel[] = [
  'slack',
  'whatsapp',
  'telegram',
  'sms',
  'email',
  'line',
  'messenger',
  'instagram',
  'wechat',
  'teams',
  'api',
]
/** The channels whose requests can be forged (email has no request signature; api a wrong key). */
export const SIGNED_CHANNELS: readonly Channel[] = CHANNELS.filter((c) => c !== 'email')

export type Vendor =
  | 'slack'
  | 'twilio'
  | 'telegram'
  | 'email'
  | 'meta'
  | 'line'
  | 'wechat'
  | 'teams'
  | 'api'

/** What one attempt got: an HTTP status, or no answer in time, or no connection. */
export type Outcome = number | 'timeout' | 'refused' | 'network'

export interface Attempt {
  /** When it started, ms since the start of its delivery run. */
  at: number
  outcome: Outcome
  /** How long its answer took (or until it failed), ms. */
  ms: number
  /** A fault was in effect when it started. */
  inFault: boolean
}

export interface Message {
  /** `fm-{run}-c{case}-m{n}`: the start of the message's text, and how its rows are found. */
  marker: string
  channel: Channel
  vendor: Vendor
  /** The `channel_message_id` the row should have. */
  messageKey: string
  /** A string in its delivery key, to find the Worker's log lines about it. */
  needle: string
  /** Signed with the wrong secret: the gateway must refuse it and write nothing. */
  forged: boolean
  attempts: Attempt[]
  /**
   * One vendor attempt as a request to the Worker at `base`: `retry` 0 is the first, a retry
   * knows what the attempt before it got.
   */
  request(base: string, retry: number, previous?: Outcome): Promise<Request>
}

interface RetryPolicy {
  /** How long the vendor waits for an answer. */
  timeoutMs: number
  /** Wait before each retry, compressed; its length is the number of retries. */
  retryDelaysMs: number[]
  /** Whether the vendor tries again after this answer. */
  retries(outcome: Outcome, noRetryHeader: boolean): boolean
  /** Waits at least an answer's Retry-After, each wait jittered (half to all of it). */
  client?: boolean
}

const is2xx = (outcome: Outcome) => typeof outcome === 'number' && outcome >= 200 && outcome < 300

export const POLICIES: Record<Vendor, RetryPolicy> = {
  slack: {
    timeoutMs: 3_000,
    retryDelaysMs: [100, 1_000, 5_000],
    retries: (outcome, noRetry) => !is2xx(outcome) && !noRetry,
  },
  twilio: {
    timeoutMs: 15_000,
    retryDelaysMs: [0],
    retries: (outcome) => outcome === 'refused',
  },
  telegram: {
    timeoutMs: 15_000,
    retryDelaysMs: [500, 1_000, 2_000, ...Array<number>(9).fill(3_000)],
    retries: (outcome) => !is2xx(outcome),
  },
  meta: {
    timeoutMs: 10_000,
    retryDelaysMs: [500, 1_000, 2_000, ...Array<number>(9).fill(3_000)],
    retries: (outcome) => outcome !== 200,
  },
  api: {
    timeoutMs: 5_000,
    retryDelaysMs: [250, 500, 1_000, 2_000, ...Array<number>(8).fill(4_000)],
    retries: (outcome) =>
      typeof outcome !== 'number' || outcome >= 500 || outcome === 409 || outcome === 429,
    client: true,
  },
  line: {
    timeoutMs: 10_000,
    retryDelaysMs: [500, 1_000, 2_000, ...Array<number>(9).fill(3_000)],
    retries: (outcome) => !is2xx(outcome),
  },
  wechat: {
    timeoutMs: 5_000,
    retryDelaysMs: [0, 0],
    retries: (outcome) => !is2xx(outcome),
  },
  teams: {
    timeoutMs: 15_000,
    retryDelaysMs: [500, 1_000],
    retries: (outcome) => !is2xx(outcome),
  },
  email: {
    timeoutMs: 30_000,
    retryDelaysMs: [1_000, 2_000, ...Array<number>(6).fill(4_000)],
    retries: (outcome) => !is2xx(outcome) && !(typeof outcome === 'number' && outcome < 500),
  },
}

/** A forged request is not the vendor's: it is sent once, with the vendor's deadline. */
const FORGER: RetryPolicy = { timeoutMs: 15_000, retryDelaysMs: [], retries: () => false }

export function vendorOf(channel: Channel): Vendor {
  if (channel === 'whatsapp' || channel === 'sms') return 'twilio'
  return channel === 'messenger' || channel === 'instagram' ? 'meta' : channel
}

/** Makes logical messages with markers unique to this run and case. */
export class MessageFactory {
  private n = 0
  /** Telegram update ids must be unique per bot across the whole run. */
  private static updateId = Math.floor(Math.random() * 2 ** 30)
  private readonly chatBase = Math.floor(Math.random() * 2 ** 40)

  constructor(
    readonly run: string,
    readonly caseNo: number,
  ) {}

  /** The LIKE pattern matching this case's markers. */
  get markerPattern(): string {
    return `fm-${this.run}-c${this.caseNo}-m%`
  }

  /** The next marker of this case (a message of a batch takes one too). */
  nextMarker(): string {
    return `fm-${this.run}-c${this.caseNo}-m${++this.n}`
  }

  create(channel: Channel, options: { forged?: boolean } = {}): Message {
    const marker = this.nextMarker()
    const n = this.n
    const forged = options.forged ?? false
    const text = `${marker} ${forged ? 'forged' : 'hello'} via ${channel}`
    const base = { marker, channel, vendor: vendorOf(channel), forged, attempts: [] }
    // A handful of senders per channel: some share a customer and conversation, some do not.
    const sender = n % 5
    if (channel === 'email') {
      if (forged) throw new Error('an email has no signature to forge')
      const messageId = `${marker}@faults.example`
      const from = `customer${sender}@customer.example`
      const raw = rawEmail({ messageId, text, from: `<${from}>` })
      return {
        ...base,
        messageKey: `${MAILBOX}:${senderKeyPart(from)}:${messageId}`,
        needle: messageId,
        request: async (url) => emailRequest(url, raw, { from }),
      }
    }
    if (channel === 'api') {
      // The marker is a plain key: its own message key part, and the needle of its log lines.
      const api = apiDelivery({ key: marker, text, customerId: `api-customer-${sender}`, forged })
      return { ...base, messageKey: api.messageKey, needle: marker, request: api.request }
    }
    const delivery = this.delivery(channel, { n, sender, text, forged, marker })
    const key = delivery.deliveryKey.replace(/^dedup:/, '')
    return {
      ...base,
      messageKey: delivery.messageKey,
      // The delivery id (event id, sid); Telegram's with its bot: an update id alone could be
      // the end of another key.
      needle: channel === 'telegram' ? key : key.slice(key.lastIndexOf(':') + 1),
      request: (url, retry, previous) =>
        delivery.request(url, { retry, reason: slackRetryReason(previous) }),
    }
  }

  private delivery(
    channel: Exclude<Channel, 'email' | 'api'>,
    m: { n: number; sender: number; text: string; forged: boolean; marker: string },
  ): SignedDelivery {
    const { n, sender, text, forged } = m
    switch (channel) {
      case 'slack': {
        // Unique per case and message: the fraction is the case and message number.
        const fraction = `${String(this.caseNo).padStart(2, '0')}${String(n).padStart(4, '0')}`
        const ts = `${Math.floor(Date.now() / 1000)}.${fraction}`
        const eventId = `Ev${m.marker.replaceAll('-', '')}`
        return slackDelivery({ eventId, ts, text, user: `U0FAULT${sender}`, forged })
      }
      case 'whatsapp':
      case 'sms':
        return twilioDelivery({ ...twilioParties(channel, sender), body: text, forged })
      case 'line':
        return lineDelivery({ text, forged })
      case 'messenger':
      case 'instagram':
        return messagingDelivery(channel, { text, forged, sender: `23456789012345${60 + sender}` })
      case 'wechat': {
        const encrypted =
          n % 2 === 0 ? { account: WECHAT_AES_ACCOUNT, aesKey: WECHAT_TEST_AES_KEY } : {}
        return wechatDelivery({ msgId: wechatMsgId(), text, forged, ...encrypted })
      }
      case 'teams':
        // Activity ids are unique per conversation: the marker makes them unique per run.
        return teamsDelivery({
          id: m.marker.replaceAll('-', ''),
          from: `29:1FAULT${sender}`,
          text,
          forged,
        })
      case 'telegram': {
        const updateId = ++MessageFactory.updateId
        return telegramDelivery({
          updateId,
          chatId: this.chatBase + sender,
          messageId: n,
          text,
          forged,
        })
      }
    }
  }
}

/** Twilio's From / To for one of a handful of senders, WhatsApp (`whatsapp:` prefixed) or SMS. */
export function twilioParties(
  channel: 'whatsapp' | 'sms',
  sender: number,
): { from: string; to: string } {
  const phone = `+1401712${String(2660 + sender)}`
  const prefix = channel === 'whatsapp' ? 'whatsapp:' : ''
  return { from: `${prefix}${phone}`, to: `${prefix}+15558675310` }
}

/** The business numbers of the WhatsApp Cloud batches (phone_number_id). */
export const WA_NUMBERS = ['106540352242922', '106540352242923']

/**
 * Logical messages delivered as one WhatsApp Cloud POST (`count` messages over the two numbers):
 * each its own message, all sharing the one delivery run (and so one `attempts` list: the table's
 * deliveries count each message of a POST).
 */
export function metaBatch(factory: MessageFactory, count: number, forged = false): Message[] {
  const members = Array.from({ length: count }, (_, i) => {
    const marker = factory.nextMarker()
    const wamid = `wamid.${marker.replaceAll('-', '')}`
    const text = `${marker} ${forged ? 'forged' : 'hello'} via whatsapp-cloud`
    return { marker, wamid, number: WA_NUMBERS[i % WA_NUMBERS.length] as string, text }
  })
  const post = whatsappCloudPost(
    WA_NUMBERS.map((phoneNumberId) => ({
      phoneNumberId,
      messages: members
        .filter((m) => m.number === phoneNumberId)
        .map((m) => waText(m.wamid, m.text)),
    })),
    { forged },
  )
  const attempts: Attempt[] = []
  return members.map(({ marker, wamid, number }) => ({
    marker,
    channel: 'whatsapp' as const,
    vendor: 'meta' as const,
    forged,
    attempts,
    messageKey: `${number}:${wamid}`,
    needle: `wa-cloud:${number}:${wamid}`,
    request: (url: string) => post.request(url),
  }))
}

/** Slack's `x-slack-retry-reason` for what the previous attempt got. */
export function slackRetryReason(previous: Outcome | undefined): string {
  if (previous === 'timeout') return 'http_timeout'
  if (previous === 'refused' || previous === 'network') return 'connection_failed'
  return 'http_error'
}

/**
 * One run of the vendor's delivery of `message`: the first attempt and the retries its policy
 * makes, until a 2xx or until the vendor gives up. Every attempt is recorded on the message.
 * `inFault` tells whether a fault is in effect right now.
 */
export async function deliver(
  message: Message,
  workerUrl: string,
  inFault: () => boolean,
): Promise<void> {
  const policy = message.forged ? FORGER : POLICIES[message.vendor]
  const firstAt = Date.now()
  let previous: Outcome | undefined
  for (let retry = 0; ; retry++) {
    const startedAt = Date.now()
    const attempt: Attempt = {
      at: startedAt - firstAt,
      outcome: 'network',
      ms: 0,
      inFault: inFault(),
    }
    let noRetry = false
    let retryAfterMs = 0
    try {
      const response = await fetch(await message.request(workerUrl, retry, previous), {
        signal: AbortSignal.timeout(policy.timeoutMs),
      })
      await response.arrayBuffer()
      attempt.outcome = response.status
      noRetry = response.headers.get('x-slack-no-retry') === '1'
      retryAfterMs = 1_000 * (Number(response.headers.get('retry-after')) || 0)
    } catch (err) {
      attempt.outcome = failureOf(err)
    }
    attempt.ms = Date.now() - startedAt
    message.attempts.push(attempt)
    previous = attempt.outcome
    const wait = policy.retryDelaysMs[retry]
    if (is2xx(attempt.outcome) || wait === undefined || !policy.retries(attempt.outcome, noRetry))
      return
    await delay(
      policy.client ? Math.max(retryAfterMs, wait / 2 + Math.random() * (wait / 2)) : wait,
    )
  }
}

function failureOf(err: unknown): Outcome {
  const error = err as { name?: string; cause?: { code?: string } }
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'timeout'
  return error.cause?.code === 'ECONNREFUSED' ? 'refused' : 'network'
}

export { is2xx }
