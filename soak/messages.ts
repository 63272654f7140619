/**
 * The soak's logical messages and their vendor deliveries: real signed requests
 * (local/vendor-deliveries.ts, as in the fault matrix's vendors.ts), for every channel, and the
 * other shapes a message takes on the wire:
 *
 * - the **original** delivery, which replays and concurrent copies send again unchanged;
 * - a **fresh delivery id** for the same message (Slack: a new `event_id`; Telegram: a new
 *   `update_id`; Twilio and email have no delivery id apart from the message's, so theirs is the
 *   same request again; Gmail: the same mail in the mailbox a second time, a new Gmail id);
 * - WhatsApp Cloud: every POST is a **batch**, as Meta sends them: the message, its `sent`
 *   status, and the run's previous WhatsApp Cloud message again (Meta batching a retry with new
 *   traffic), over two phone numbers; the earlier one must be a duplicate, the status no row;
 * - **edits** (Slack `message_changed`, Telegram `edited_message`), each later than the last;
 * - a **delete** (Slack `message_deleted`).
 *
 * Every message's text starts with its marker (`sk-{run}-m{n}`): its rows are found by it, not by
 * the key the gateway computes. It also carries a poison tag (`[p0]`..`[p9]`): the nemesis makes
 * the balancer refuse every forward holding one tag for a while, a tenth of the traffic.
 * @module
 */
import {
  emailRequest,
  MAILBOX,
  nowSeconds,
  randomHex,
  rawEmail,
  type SignedDelivery,
  slackDelivery,
  teamsDelivery,
  telegramDelivery,
  twilioDelivery,
  waText,
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
  'teams',
  'email',
  'gmail',
]
/** Channels whose requests carry a signature that can be forged. */
export const SIGNED: readonly SoakChannel[] = [
  'slack',
  'whatsapp',
  'whatsapp-cloud',
  'sms',
  'telegram',
  'teams',
]
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
          messageSid: this.twilioSid(message),
          ...twilioParties(message.channel, message.n % 5),
          body: text,
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

  private readonly twilioSids = new Map<number, string>()

  private twilioSid(message: SoakMessage): string {
    let sid = this.twilioSids.get(message.n)
    if (!sid) {
      sid = `SM${randomHex(16)}`
      this.twilioSids.set(message.n, sid)
    }
    return sid
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
