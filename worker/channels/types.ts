/**
 * The channel kit: what a webhook channel is, the leaf every channel stands on. One
 * {@link WebhookChannel} object per vendor, with its steps in the order the route calls them:
 * `verify` (over the raw bytes, before anything is parsed) → `parse` (JSON / form; throws
 * InvalidPayloadError) → `classify` (what to do with this delivery, and under which keys); the
 * verdicts its verifiers give ({@link Verdict}, {@link TenantVerdict}), and what its settings are
 * ({@link ChannelConfig}). It imports nothing of the Worker but the replies' shape: the settings
 * (worker/config.ts) are composed above the channels, from the registry. Reading the payload
 * itself is untrusted.ts's.
 * @module
 */

import type { ChannelTtlSetting } from '../../claims'
import type { DeliveryKey } from '../../contract/delivery-key'
import type { Channel, InboundEventDraft } from '../../contract/event'
import type { RawBody } from '../../shared/body'
import type { SettingRow, StringEnv } from '../../shared/settings'
import type { ChannelReplies } from './replies'

export { type DeliveryKey, formatDeliveryKey } from '../../contract/delivery-key'

/**
 * Everything the gateway needs of one webhook channel: worker/routes.ts serves every channel of
 * the registry (worker/channels/index.ts) with the same steps, config → bounded body → `verify` →
 * `parse` → `classify` → the delivery core → `replies`.
 */
export interface WebhookChannel<
  Name extends string = string,
  Config = unknown,
  Payload = unknown,
  Variables extends readonly SettingRow[] = readonly SettingRow[],
> {
  /**
   * Log label, and the key of its settings in worker/config.ts's Settings (read there with
   * `channelConfig`).
   */
  readonly name: Name
  /**
   * The event channels its events are (`messages.channel`: Twilio's `sms` and `whatsapp`, WhatsApp
   * Cloud's `whatsapp` too), each of contract/event.ts's CHANNEL_NAME form. What needs the event
   * channels of the deployment (SPOOL_CHANNELS's check, the spool tests) takes them from here.
   */
  readonly eventChannels: readonly Channel[]
  /**
   * The variables it reads: its rows of the Worker's settings table (worker/settings.ts), which
   * types them as bindings (worker/env.ts) and routes them in `npm run dev`.
   */
  readonly variables: Variables
  /** Its paths under /webhooks; a `:param` reaches `verify` (Telegram's `/telegram/:botId`). */
  readonly paths: readonly string[]
  /**
   * How long the vendor may wait for our answer, with a margin; the budgets for Redis, the
   * in-flight wait and the origin are cut to fit.
   */
  readonly budgetMs: number
  /**
   * Its dedup TTL row (`DEDUP_TTL_SECONDS_{NAME}`, claims/settings.ts `channelTtlSetting`, with
   * its vendor's redelivery horizon when that is longer than a day), also among its `variables`.
   */
  readonly dedupTtl: ChannelTtlSetting
  /**
   * The largest body its vendor documents, when larger than MAX_BODY_BYTES (Meta: batches of up
   * to 3 MB): the route's bound is the larger of the two. A 413 is a retry for days, not a fix.
   */
  readonly maxBodyBytes?: number
  /** Its settings from the bindings; what is missing by variable name, never by value. */
  settings(env: StringEnv, warnings: string[]): ChannelConfig<Config>
  /** Whose secrets match the raw request (a tenant id, or null for shared secrets). */
  verify(parts: RequestParts, config: Config, params: PathParams): Promise<TenantVerdict>
  parse(parts: RequestParts): Payload
  /**
   * `tenant` is the one whose secrets verified the request. One delivery, or a batch (one POST
   * that carries several messages: each item is claimed, forwarded and queued on its own).
   */
  classify(payload: Payload, tenant: string | null): Classified | Promise<Classified>
  /**
   * The documented non-message events it answers "ok" for and keeps nothing of, by the `ignore`
   * reason its classifier gives each, with what it is (docs/keys.md lists them). An `ignore` with
   * any other reason is kept as an unrecognized event instead: "ignored" is this list, nothing else.
   */
  readonly ignored: Readonly<Record<string, string>>
  /** The text `parse` reads, as kept for a replay (WeChat: the decrypted push); default the body. */
  replayText?(parts: RequestParts): string
  /** What "got it" and "send it again" look like to this vendor. */
  readonly replies: ChannelReplies
  /**
   * A GET on its paths that proves we own the URL (Meta's subscription handshake, which echoes
   * `hub.challenge`; WeChat's, which echoes `echostr` under a signature made with the token of the
   * account its path names): the challenge to answer as plain text, or why not (403). Runs after
   * the config check; claims and writes nothing. (Slack's url_verification is a POST: `classify`.)
   */
  handshake?(
    query: URLSearchParams,
    config: Config,
    params: PathParams,
  ): HandshakeVerdict | Promise<HandshakeVerdict>
}

/** A channel is either ready, or names what is missing (variable names, never values). */
export type ChannelConfig<T> = { ok: true; value: T } | { ok: false; missing: string[] }

/**
 * A signature that does not cover the body (WeChat's plain mode) proves only that its query was
 * signed: such a request is good once, for the body it first came with. The gateway claims `key`
 * for `hash` (the body's) before anything is parsed: the same body again is the same delivery,
 * another is refused (gateway.ts `claimSignatureOnce`).
 */
export interface OnceBinding {
  key: DeliveryKey
  hash: string
  /** How long the signature itself is accepted, and so how long its claim must outlive it. */
  ttlSeconds: number
}

/**
 * A verifier's answer, saying whose secrets matched: a tenant id, or null (shared secrets;
 * tenant-secrets.ts picks them).
 */
export type TenantVerdict =
  | {
      ok: true
      tenant: string | null
      once?: OnceBinding
      handshakeOnly?: boolean
      /** The key scopes this tenant may write, when they are not the tenant id itself. */
      scopes?: ReadonlySet<string>
      /**
       * The event tenants (the owners of the rows: Slack workspaces) this tenant may write for,
       * when the channel's config restricts them; absent: its key scopes say it all.
       */
      writesFor?: ReadonlySet<string>
    }
  | { ok: false; reason: string }

export type HandshakeVerdict =
  | { ok: true; challenge: string; once?: OnceBinding }
  | { ok: false; reason: string }

/** The route's `:param`s (absent on a path without them). */
export type PathParams = Readonly<Record<string, string | undefined>>

/** What a verifier sees of a request. */
export interface RequestParts {
  /** `request.url` as the Worker received it. */
  url: string
  headers: Headers
  body: RawBody
}

export interface VerifyOptions {
  /** Injectable clock (unix seconds), for tests of the replay window. */
  nowSeconds?: () => number
}

export type Verdict = { ok: true; once?: OnceBinding } | { ok: false; reason: string }

/** What the gateway does with one verified, parsed delivery. */
export type Delivery =
  /** A message, edit or delete: claim, forward to the origin, answer by the outcome. */
  | { action: 'forward'; key: DeliveryKey; draft: InboundEventDraft }
  /**
   * Worth remembering but not a message (status callbacks, interactions): claim, never forward.
   * `material` is what its hash covers (a batch item's own JSON); default the raw body.
   */
  | { action: 'record'; key: DeliveryKey; material?: string }
  /**
   * A documented non-message event (a read, a typing notice, a follow, a bot's own echo): 200,
   * nothing kept. Its reason must be one of the channel's `ignored` (else it is kept as
   * unrecognized: worker/unrecognized.ts).
   */
  | { action: 'ignore'; reason: string }
  /**
   * Verified content the classifier cannot place (an unfamiliar event, a message of an unknown
   * shape): kept whole as a dead letter `unrecognized_event`, replayed through the channel's code
   * once it knows it. `payload`: the text to parse again for this item alone (a batch item in an
   * envelope of its own); default the request's body.
   */
  | { action: 'unrecognized'; reason: string; payload?: string }
  /** Slack's url_verification handshake: answer the challenge. */
  | { action: 'challenge'; challenge: string }

/** Every delivery but Slack's handshake: what the shared claim / forward path handles. */
export type ChannelDelivery = Exclude<Delivery, { action: 'challenge' }>

/**
 * What a channel makes of one request: a delivery, or a batch of them (Meta's
 * `entry[].changes[].value.messages[]`, Twilio Event Streams): each item its own event with its
 * own keys. The sender is told "ok" only when every item is taken.
 */
export type Classified = Delivery | readonly ChannelDelivery[]

/** The deliveries of a classified request, one or many. */
export function deliveriesOf(classified: Classified): readonly Delivery[] {
  return isBatch(classified) ? classified : [classified]
}

export function isBatch(classified: Classified): classified is readonly ChannelDelivery[] {
  return Array.isArray(classified)
}
