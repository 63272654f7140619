/**
 * The soak's logical messages and their vendor deliveries: real signed requests
 * (local/vendor-deliveries.ts, as in the fault matrix's vendors.ts), for every channel, and the
 * other shapes a message takes on the wire:
 *
 * - the **original** delivery, which replays and concurrent copies send again unchanged;
 * - a **fresh delivery id** for the same message (Slack: a new `event_id`; Telegram: a new
 *   `update_id`; LINE: a new `webhookEventId`; Twilio, Messenger, Instagram and email have no
 *   delivery id apart from the message's, so theirs is the same request again; Gmail: the same
 *   mail in the mailbox a second time, a new Gmail id);
 * - WhatsApp Cloud: every POST is a **batch**, as Meta sends them: the message, its `sent`
 *   status, and the run's previous WhatsApp Cloud message again (Meta batching a retry with new
 *   traffic), over two phone numbers; the earlier one must be a duplicate, the status no row;
 * - our own API (POST /v1/messages): one Idempotency-Key per message, so its fresh delivery id is
 *   the same request again (a new key would be a new user action, a new message);
 * - **edits** (Slack `message_changed`, Telegram `edited_message`), each later than the last;
 * - a **delete** (Slack `message_deleted`).
 *
 * Every message's text starts with its marker (`sk-{run}-m{n}`): its rows are found by it, not by
 * the key the gateway computes. It also carries a poison tag (`[p0]`..`[p9]`): the nemesis makes
 * the balancer refuse every forward holding one tag for a while, a tenth of the traffic.
 * @module
 */
import {
  apiDelivery,
  emailRequest,
  lineDelivery,
  lineEventId,
  lineMessageId,
  MAILBOX,
  messagingDelivery,
  metaMid,
  nowSeconds,
  randomHex,
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
} from '../local/vendor-deliveries'
import {
  type Channel,
  type Outcome,
  slackRetryReason,
  twilioParties,
  type Vendor,
  vendorOf,
  WA_NUMBERS,
} from '../test/faults/support/vendors'

/**
 * Where a message comes from: the Worker's channels (WhatsApp Cloud's rows are channel
 * `whatsapp`, like Twilio's), and Gmail (polled by the origin).
 */
export type SoakChannel = Channel | 'gmail' | 'whatsapp-cloud'
export const SOAK_CHANNELS: readonly SoakChannel[] = [
  'slack',
  'whatsapp',
  'whatsapp-cloud',
  'sms',
  'telegram',
  'line',
  'messenger',
  'instagram',
  'wechat',
  'teams',
  'email',
  'gmail',
  'api',
]
/** Channels whose requests carry a signature that can be forged. */
export const SIGNED: readonly SoakChannel[] = SOAK_CHANNELS.filter(
  (channel) => channel !== 'email' && channel !== 'gmail',
)
/** Channels with edits on the wire; Slack alone also sends deletes. */
export const EDITABLE: readonly SoakChannel[] = ['slack', 'telegram']
export const DELETABLE: readonly SoakChannel[] = ['slack']

export const POISON_TAGS = 10
export const poisonTag = (tag: number): string => `[p${tag}]`

/** The mailbox both email paths deliver to (the Worker's RCPT TO, and the polled Gmail box). */
export { MAILBOX }

/** One vendor delivery: what an attempt sends. Retries of it are built from the same one. */
export interface Delivery {
  /** `original`, `fresh-id`, `edit-{k}` or `delete`: for the history. */
  name: string
  /**
   * One attempt as a request to the Worker at `base`. Gmail deliveries have no request: the
   * raw mail goes into the fake mailbox instead ({@link Delivery.raw}).
   */
  request(base: string, retry: number, previous?: Outcome): Promise<Request>
  raw?: string
}

/** One attempt of one of a message's deliveries, as the checker and the table read it. */
export interface SoakAttempt {
  /** The generator's event that started the delivery. */
  event: number
  delivery: string
  /** What the Worker answered; `stored` for a mail put into the Gmail mailbox. */
  outcome: Outcome | 'stored'
  /** Fault kinds in effect when the attempt started. */
  faults: readonly string[]
}

export class SoakMessage {
  /** Edits made so far; the last one's text is what the row must end with. */
  edits = 0
  deleted = false
  /** Every attempt of every delivery of this message, in the order they ended. */
  readonly attempts: SoakAttempt[] = []
  /** Generator events about this message. */
  events = 0
  /** The ids its deliveries' keys end with (`dedup:{namespace}:{scope}:{id}`). */
  readonly deliveryIds = new Set<string>()
  /** The delivery id of its delete (the last part of that delivery key). */
  deleteId?: string
  readonly original: Delivery
  private freshIds = 0

  constructor(
    private readonly maker: MessageMaker,
    readonly n: number,
    readonly marker: string,
    readonly channel: SoakChannel,
    readonly tag: number,
    readonly forged: boolean,
  ) {
    this.original = maker.delivery(this, 'original')
  }

  /** The vendor behind the channel; Gmail's mail is polled, not delivered by a vendor. */
  get vendor(): Vendor | 'gmail' {
    if (this.channel === 'whatsapp-cloud') return 'meta'
    return this.channel === 'gmail' ? 'gmail' : vendorOf(this.channel)
  }

  /** `messages.channel` of its row. */
  get rowChannel(): Channel {
    if (this.channel === 'whatsapp-cloud') return 'whatsapp'
    return this.channel === 'gmail' ? 'email' : this.channel
  }

  /** The text of edit `k` (0: the original). */
  text(k = this.edits): string {
    const what = this.forged ? 'forged' : k === 0 ? 'hello' : `edit ${k}`
    return `${this.marker} ${what} ${poisonTag(this.tag)} via ${this.channel}`
  }

  freshId(): Delivery {
    return this.maker.delivery(this, 'fresh-id', ++this.freshIds)
  }

  edit(): Delivery {
    this.edits++
    return this.maker.delivery(this, 'edit', this.edits)
  }

  delete(): Delivery {
    this.deleted = true
    return this.maker.delivery(this, 'delete')
  }
}

type Shape = 'original' | 'fresh-id' | 'edit' | 'delete'

/** Makes the messages of one soak run (markers unique to the run). */
export class MessageMaker {
  private n = 0
  /** Seconds of the run's start: Slack `ts` and Telegram `date` of every original. */
  private readonly baseSeconds = nowSeconds()
  /** Telegram update ids are unique per bot for good: start somewhere no other run was. */
  private updateId = Math.floor(Math.random() * 2 ** 30)
  private readonly chatBase = Math.floor(Math.random() * 2 ** 40)
  /** A Slack channel of the run's own: message keys are team:channel:ts. */
  private readonly slackChannel: string

  constructor(readonly run: string) {
    this.slackChannel = `C${run.toUpperCase().replace(/[^A-Z0-9]/g, '')}`
  }

  /** The LIKE pattern matching this run's markers. */
  get markerPattern(): string {
    return `sk-${this.run}-m%`
  }

  create(channel: SoakChannel, tag: number, options: { forged?: boolean } = {}): SoakMessage {
    const n = ++this.n
    const forged = options.forged ?? false
    if (forged && !SIGNED.includes(channel)) throw new Error(`${channel} has no signature to forge`)
    return new SoakMessage(this, n, `sk-${this.run}-m${n}`, channel, tag, forged)
  }

  /** The delivery of `message` in `shape` (`k`: which fresh id or edit). */
  delivery(message: SoakMessage, shape: Shape, k = 0): Delivery {
    const name = shape === 'original' || shape === 'delete' ? shape : `${shape}-${k}`
    const text = message.text(shape === 'edit' ? k : 0)
    if (message.channel === 'whatsapp-cloud') {
      return { name, request: this.whatsappCloud(message, text) }
    }
    if (message.channel === 'email' || message.channel === 'gmail') {
      const raw = this.email(message, text)
      const from = senderOf(message)
      return {
        name,
        ...(message.channel === 'gmail' ? { raw } : {}),
        request: async (url) => emailRequest(url, raw, { from }),
      }
    }
    if (message.channel === 'api') {
      // The marker is the key: every shape is the original request again.
      message.deliveryIds.add(message.marker)
      const api = apiDelivery({
        key: message.marker,
        text: message.text(0),
        customerId: `soak-customer-${message.n % 5}`,
        forged: message.forged,
      })
      return { name, request: api.request }
    }
    const signed = this.signed(message, shape, k, text)
    message.deliveryIds.add(signed.deliveryKey.slice(signed.deliveryKey.lastIndexOf(':') + 1))
    return {
      name,
      request: (url, retry, previous) =>
        signed.request(url, { retry, reason: slackRetryReason(previous) }),
    }
  }

  private signed(message: SoakMessage, shape: Shape, k: number, text: string): SignedDelivery {
    const { forged } = message
    switch (message.channel) {
      case 'slack':
        return this.slack(message, shape, k, text)
      case 'whatsapp':
      case 'sms':
        return twilioDelivery({
          // Twilio has no delivery id apart from the message's: every shape is the same SID.
          messageSid: this.idOf(message, 'sid', () => `SM${randomHex(16)}`),
          ...twilioParties(message.channel, message.n % 5),
          body: text,
          forged,
        })
      case 'line':
        return lineDelivery({
          messageId: this.idOf(message, 'line', lineMessageId),
          // A fresh id is a new webhookEventId for the same message; replays reuse the original's.
          webhookEventId:
            shape === 'fresh-id' ? lineEventId() : this.idOf(message, 'line-event', lineEventId),
          text,
          forged,
        })
      case 'messenger':
      case 'instagram':
        // Meta sends no delivery id apart from the message's: every shape is the same mid.
        return messagingDelivery(message.channel, {
          mid: this.idOf(message, 'mid', metaMid),
          sender: `23456789012345${60 + (message.n % 5)}`,
          text,
          forged,
        })
      case 'telegram':
        return telegramDelivery({
          updateId: ++this.updateId,
          chatId: this.chatBase + (message.n % 5),
          messageId: message.n,
          text,
          date: this.baseSeconds,
          forged,
          ...(shape === 'edit' ? { field: 'edited_message', editDate: this.baseSeconds + k } : {}),
        })
      case 'wechat':
        // WeChat has one id per message: every shape is the same MsgId (a fresh-id is a replay).
        return wechatDelivery({
          msgId: this.idOf(message, 'msgid', wechatMsgId),
          text,
          forged,
          ...(message.n % 2 === 0
            ? { account: WECHAT_AES_ACCOUNT, aesKey: WECHAT_TEST_AES_KEY }
            : {}),
        })
      case 'teams':
        // The activity id is the message's (no delivery id of its own): a fresh id is a resend.
        return teamsDelivery({
          id: message.marker.replaceAll('-', ''),
          from: `29:1SOAK${message.n % 5}`,
          text,
          forged,
        })
      default:
        throw new Error(`${message.channel} has no single signed delivery`)
    }
  }

  private slack(message: SoakMessage, shape: Shape, k: number, text: string): SignedDelivery {
    const fraction = String(message.n).padStart(6, '0')
    const suffix = shape === 'original' ? '' : shape === 'delete' ? 'd' : `${shape[0]}${k}`
    const eventId = `Ev${message.marker.replaceAll('-', '')}${suffix}`
    if (shape === 'delete') message.deleteId = eventId
    // Edits happen k seconds after the message; the delete after every edit.
    const laterTs = `${this.baseSeconds + (shape === 'delete' ? 1_000 : k)}.${fraction}`
    return slackDelivery({
      eventId,
      ts: `${this.baseSeconds}.${fraction}`,
      text,
      user: `U0SOAK${message.n % 5}`,
      channel: this.slackChannel,
      forged: message.forged,
      ...(shape === 'edit' ? { editedAt: laterTs, previousText: message.text(0) } : {}),
      ...(shape === 'delete' ? { deletedAt: laterTs, previousText: message.text() } : {}),
    })
  }

  private readonly ids = new Map<string, string>()

  /** The message's own id of `kind` (a Twilio SID, a LINE message id, a mid, a WeChat MsgId), made once. */
  private idOf(message: SoakMessage, kind: string, make: () => string): string {
    const key = `${kind}:${message.n}`
    let id = this.ids.get(key)
    if (!id) {
      id = make()
      this.ids.set(key, id)
    }
    return id
  }

  /** The previous WhatsApp Cloud message of the run, batched again with the next one. */
  private lastCloud: { message: unknown; number: string; wamid: string } | null = null

  /** One Meta POST: this message, its `sent` status, and the previous message again. */
  private whatsappCloud(message: SoakMessage, text: string) {
    const wamid = `wamid.${message.marker.replaceAll('-', '')}`
    message.deliveryIds.add(wamid)
    const number = WA_NUMBERS[message.n % 2] as string
    const own = waText(wamid, text, `1650555${String(1000 + (message.n % 5))}`)
    const status = { id: wamid, status: 'sent', timestamp: '1750030073', recipient_id: '1' }
    const earlier = message.forged || this.lastCloud?.wamid === wamid ? null : this.lastCloud
    if (!message.forged) this.lastCloud = { message: own, number, wamid }
    const post = whatsappCloudPost(
      WA_NUMBERS.map((phoneNumberId) => ({
        phoneNumberId,
        messages: [
          ...(number === phoneNumberId ? [own] : []),
          ...(earlier?.number === phoneNumberId ? [earlier.message] : []),
        ],
        statuses: number === phoneNumberId ? [status] : [],
      })),
      { forged: message.forged },
    )
    return (url: string) => post.request(url)
  }

  private email(message: SoakMessage, text: string): string {
    message.deliveryIds.add(`${message.marker}@soak.example`)
    return rawEmail({
      from: senderOf(message),
      to: MAILBOX,
      messageId: `${message.marker}@soak.example`,
      text,
    })
  }
}

/** A handful of senders: some messages share a customer and conversation, some do not. */
function senderOf(message: SoakMessage): string {
  return `customer${message.n % 5}@customer.example`
}
