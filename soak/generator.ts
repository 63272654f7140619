/**
 * The generator: an open-loop load. {@link planEvents} draws, from the seed alone, what happens
 * when: `rate` events a second for the run's duration, each one of
 *
 * - `new`: a new message on one of the channels, our own API's included (2% of them forged:
 *   signed with a wrong secret, or sent with a wrong API key);
 * - `replay` (the same delivery again, later), `copies` (2-4 copies of it at once, as a vendor
 *   that sends twice does), `fresh-id` (the same message under a new delivery id): together a
 *   quarter of the events;
 * - `edit` (Slack, Telegram) and `delete` (Slack) of an earlier message.
 *
 * {@link Load} then sends the plan on time whatever the answers (open loop: a slow gateway
 * meets the same arrivals, it does not slow them down), each delivery with its vendor's real
 * retry behaviour (vendors.ts `deliver`), and writes every request and answer to the history.
 * @module
 */
import { delay } from '../local/processes'
import { type Attempt, deliver, type Message } from '../test/faults/support/vendors'
import type { FakeGmail } from '../test/support/fake-gmail'
import type { History } from './history'
import {
  DELETABLE,
  type Delivery,
  EDITABLE,
  type MessageMaker,
  POISON_TAGS,
  SIGNED,
  type SoakChannel,
  type SoakMessage,
} from './messages'
import type { Rng } from './rng'

export type EventKind = 'new' | 'forged' | 'replay' | 'copies' | 'fresh-id' | 'edit' | 'delete'

export interface PlannedEvent {
  /** 1, 2, ... in the order they start. */
  n: number
  /** When it starts, ms after the load starts. */
  at: number
  kind: EventKind
  /** Which message: the ordinal of the `new`/`forged` event that made it (0-based). */
  message: number
  channel: SoakChannel
  /** The message's poison tag. */
  tag: number
  /** Deliveries started at once (more than one only for `copies`). */
  copies: number
}

export interface LoadSettings {
  /** Events a second. */
  rate: number
  durationMs: number
  channels: readonly SoakChannel[]
}

const KIND_WEIGHTS: ReadonlyArray<readonly [Exclude<EventKind, 'forged'>, number]> = [
  ['new', 70],
  ['replay', 10],
  ['copies', 8],
  ['fresh-id', 7],
  ['edit', 4],
  ['delete', 1],
]
const CHANNEL_WEIGHTS: Record<SoakChannel, number> = {
  slack: 3,
  whatsapp: 2,
  'whatsapp-cloud': 2,
  sms: 2,
  telegram: 2,
  line: 1,
  messenger: 1,
  instagram: 1,
  wechat: 2,
  teams: 2,
  email: 2,
  gmail: 1,
  api: 2,
}
const FORGED_SHARE = 0.02
/** Replays, edits and deletes pick among this many of the latest messages. */
const RECENT = 500
/** A delete comes this long after its message at the earliest (see the checker on deletes). */
const DELETE_AFTER_MS = 10_000

interface PlannedMessage {
  ordinal: number
  at: number
  channel: SoakChannel
  tag: number
  forged: boolean
  deleted: boolean
}

/** The whole schedule of events, from `rng` and the settings alone. */
export function planEvents(rng: Rng, settings: LoadSettings): PlannedEvent[] {
  const count = Math.floor((settings.rate * settings.durationMs) / 1000)
  const channels = settings.channels.map((c) => [c, CHANNEL_WEIGHTS[c]] as const)
  const messages: PlannedMessage[] = []
  const events: PlannedEvent[] = []
  for (let i = 0; i < count; i++) {
    const at = Math.round((i * 1000) / settings.rate)
    const event = (kind: EventKind, m: PlannedMessage, copies = 1): PlannedEvent => ({
      n: i + 1,
      at,
      kind,
      message: m.ordinal,
      channel: m.channel,
      tag: m.tag,
      copies,
    })
    const kind = rng.weighted(KIND_WEIGHTS)
    const target = kind === 'new' ? undefined : pickTarget(rng, messages, kind, at)
    if (target) {
      if (kind === 'delete') target.deleted = true
      events.push(event(kind, target, kind === 'copies' ? rng.int(2, 4) : 1))
      continue
    }
    const channel = rng.weighted(channels)
    const forged = SIGNED.includes(channel) && rng.chance(FORGED_SHARE)
    const made: PlannedMessage = {
      ordinal: messages.length,
      at,
      channel,
      tag: rng.int(0, POISON_TAGS - 1),
      forged,
      deleted: false,
    }
    messages.push(made)
    events.push(event(forged ? 'forged' : 'new', made))
  }
  return events
}

/** An earlier message `kind` can be about, or none (then the event is a new message). */
function pickTarget(
  rng: Rng,
  messages: PlannedMessage[],
  kind: EventKind,
  at: number,
): PlannedMessage | undefined {
  const recent = messages.slice(-RECENT).filter((m) => !m.forged && !m.deleted)
  const fits = recent.filter((m) => {
    if (kind === 'edit') return EDITABLE.includes(m.channel)
    if (kind === 'delete') return DELETABLE.includes(m.channel) && m.at <= at - DELETE_AFTER_MS
    return true
  })
  return fits.length > 0 ? rng.pick(fits) : undefined
}

export interface LoadTargets {
  workerUrl: string
  /** The fake Gmail API the origin polls; null when Gmail is not in the run. */
  gmail: FakeGmail | null
  history: History
  /** Fault kinds in effect right now (the nemesis). */
  faults(): readonly string[]
}

/** Sends a plan; {@link Load.messages} is what the checker reads afterwards. */
export class Load {
  /** By ordinal. */
  readonly messages: SoakMessage[] = []
  private readonly runs: Array<Promise<void>> = []

  constructor(
    private readonly maker: MessageMaker,
    private readonly targets: LoadTargets,
  ) {}

  /**
   * Starts every event on time (none after `signal` aborts); resolves when every delivery run
   * has ended.
   */
  async run(plan: readonly PlannedEvent[], signal?: AbortSignal): Promise<void> {
    const startedAt = Date.now()
    for (const event of plan) {
      if (signal?.aborted) break
      const wait = startedAt + event.at - Date.now()
      if (wait > 0) await delay(wait)
      this.start(event)
    }
    await Promise.all(this.runs)
  }

  private start(event: PlannedEvent): void {
    let message: SoakMessage | undefined
    if (event.kind === 'new' || event.kind === 'forged') {
      message = this.maker.create(event.channel, event.tag, { forged: event.kind === 'forged' })
      this.messages[event.message] = message
    } else {
      message = this.messages[event.message]
    }
    if (!message) throw new Error(`event ${event.n} is about message ${event.message}, not made`)
    message.events++
    const delivery = deliveryFor(message, event.kind)
    for (let copy = 0; copy < event.copies; copy++) {
      this.runs.push(this.send(event, message, delivery, copy))
    }
  }

  /** One vendor delivery run: the first attempt and the vendor's retries. */
  private async send(
    event: PlannedEvent,
    message: SoakMessage,
    delivery: Delivery,
    copy: number,
  ): Promise<void> {
    const { history } = this.targets
    const ids = { event: event.n, marker: message.marker, delivery: delivery.name, copy }
    if (delivery.raw !== undefined) {
      const faults = this.targets.faults()
      history.write({ type: 'request', ...ids, kind: event.kind, channel: message.channel, faults })
      this.targets.gmail?.deliver(delivery.raw)
      message.attempts.push({ event: event.n, delivery: delivery.name, outcome: 'stored', faults })
      history.write({ type: 'answer', ...ids, attempt: 0, outcome: 'stored' })
      return
    }
    const started: Array<readonly string[]> = []
    const attempts: Attempt[] = []
    // Each answer goes to the history as it comes, not when the run ends.
    attempts.push = (...items: Attempt[]) => {
      for (const attempt of items) {
        const attemptNo = attempts.length
        const faults = started[attemptNo] ?? []
        message.attempts.push({
          event: event.n,
          delivery: delivery.name,
          outcome: attempt.outcome,
          faults,
        })
        history.write({ type: 'answer', ...ids, attempt: attemptNo, outcome: attempt.outcome })
        Array.prototype.push.call(attempts, attempt)
      }
      return attempts.length
    }
    const vendorMessage: Message = {
      marker: message.marker,
      channel: message.rowChannel,
      vendor: message.vendor === 'gmail' ? 'email' : message.vendor,
      messageKey: '',
      needle: message.marker,
      forged: message.forged,
      attempts,
      request: (base, retry, previous) => {
        const faults = this.targets.faults()
        started[retry] = faults
        history.write({
          type: 'request',
          ...ids,
          attempt: retry,
          kind: event.kind,
          channel: message.channel,
          faults,
        })
        return delivery.request(base, retry, previous)
      },
    }
    await deliver(vendorMessage, this.targets.workerUrl, () => this.targets.faults().length > 0)
  }
}

function deliveryFor(message: SoakMessage, kind: EventKind): Delivery {
  switch (kind) {
    case 'new':
    case 'forged':
    case 'replay':
    case 'copies':
      return message.original
    case 'fresh-id':
      return message.freshId()
    case 'edit':
      return message.edit()
    case 'delete':
      return message.delete()
  }
}
