/**
 * Channel connections as data: one tenant's channel account and what verifies and scopes it. The
 * origin keeps them (Postgres, secrets sealed with ORIGIN_KEKS; the control plane) and publishes
 * an edge copy to Workers KV (secrets sealed with EDGE_KEKS), which the Worker reads one key per
 * request. This file is what both wings agree on: the kinds per channel, the edge record, its KV
 * keys and the additional data that binds a sealed secret to its place (shared/envelope.ts).
 * @module
 */
import * as v from 'valibot'

/** A connection's id, also its route id (`/webhooks/<channel>/c/<id>`): 130 random bits, no secret. */
export const CONNECTION_ID = /^c_[a-z2-7]{26}$/

/** A fresh connection id (crypto random, base32). */
export function newConnectionId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567'
  const bytes = crypto.getRandomValues(new Uint8Array(26))
  return `c_${Array.from(bytes, (byte) => alphabet[byte & 31]).join('')}`
}

/**
 * What one channel's connection holds: the vendor account it is (the tenant id today's
 * `…_BY_…` variables list), the secret fields that verify it, the ids it may write for (Slack
 * workspaces, Meta pages / numbers / accounts, mail aliases) and non-secret settings (WeChat
 * AppID). `index`: the KV index entries (`idx:<channel>:<x>` -> its id) the publisher writes,
 * by which a request on the channel's shared path finds the connection before verifying:
 * `account` for every webhook kind whose shared path names its account (Slack `api_app_id`,
 * LINE `destination`, Twilio's AccountSid, Telegram's bot, WeChat's account, Teams' app id, the
 * last after its JWT verified), so the registry answers before the variables for every tenant it
 * holds; `ids` where the body names an id instead (Meta's first `entry[].id` or WhatsApp's
 * first `phone_number_id`, an API key's hash); `mailbox`: the account and each alias (a mail's
 * envelope recipient).
 */
export interface ConnectionKind {
  readonly account: { readonly pattern: RegExp; readonly hint: string }
  readonly secretFields: readonly string[]
  readonly ids?: { readonly noun: string; readonly pattern: RegExp }
  readonly settings?: readonly string[]
  /** `mailbox`: its account and each of its ids (an inbox and its aliases, one owner each). */
  readonly index?: 'account' | 'ids' | 'mailbox'
}

const ANY_ID = /^[A-Za-z0-9_.:@+-]{1,128}$/

export const CONNECTION_KINDS = {
  slack: {
    account: { pattern: /^A[A-Z0-9]{2,31}$/, hint: 'a Slack api_app_id (A…)' },
    secretFields: ['signing_secret'],
    ids: { noun: 'workspace team ids', pattern: /^[TE][A-Z0-9]{2,31}$/ },
    index: 'account',
  },
  twilio: {
    account: { pattern: /^AC[0-9a-f]{32}$/, hint: 'a Twilio AccountSid (AC + 32 hex)' },
    secretFields: ['auth_token'],
    index: 'account',
  },
  telegram: {
    account: { pattern: /^[1-9][0-9]{0,19}$/, hint: 'a numeric bot id' },
    secretFields: ['secret_token'],
    index: 'account',
  },
  'whatsapp-cloud': {
    account: { pattern: /^[0-9]{1,32}$/, hint: 'a numeric Meta app id' },
    secretFields: ['app_secret'],
    ids: { noun: 'phone number ids', pattern: /^[0-9]{1,32}$/ },
    index: 'ids',
  },
  messenger: {
    account: { pattern: /^[0-9]{1,32}$/, hint: 'a numeric Meta app id' },
    secretFields: ['app_secret'],
    ids: { noun: 'page ids', pattern: /^[0-9]{1,32}$/ },
    index: 'ids',
  },
  instagram: {
    account: { pattern: /^[0-9]{1,32}$/, hint: 'a numeric Meta app id' },
    secretFields: ['app_secret'],
    ids: { noun: 'Instagram account ids', pattern: /^[0-9]{1,32}$/ },
    index: 'ids',
  },
  line: {
    account: { pattern: /^U[0-9a-f]{32}$/, hint: "a LINE bot's user id (U + 32 hex)" },
    secretFields: ['channel_secret'],
    index: 'account',
  },
  wechat: {
    account: { pattern: /^gh_[0-9a-f]{12}$/, hint: "an account's original id (gh_ + 12 hex)" },
    secretFields: ['token', 'aes_key'],
    settings: ['app_id'],
    index: 'account',
  },
  teams: {
    // The edge's rule (worker/channels/teams.ts APP_ID), lower case.
    account: {
      pattern: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      hint: 'a Microsoft App ID (a GUID)',
    },
    secretFields: [],
    index: 'account',
  },
  api: {
    account: { pattern: /^[A-Za-z0-9_-]{1,64}$/, hint: 'a tenant id of [A-Za-z0-9_-]' },
    secretFields: ['api_key', 'api_key_hash'],
    index: 'ids',
  },
  email: {
    account: { pattern: /^[^\s@]{1,64}@[^\s@]{1,255}$/, hint: 'a mailbox address' },
    secretFields: [],
    ids: { noun: 'aliases', pattern: /^[^\s@]{1,64}@[^\s@]{1,255}$/ },
    index: 'mailbox',
  },
} as const satisfies Record<string, ConnectionKind>

export type ConnectionChannel = keyof typeof CONNECTION_KINDS
export const CONNECTION_CHANNELS = Object.keys(CONNECTION_KINDS) as ConnectionChannel[]

export const CONNECTION_LIMITS = {
  /** Ids per connection (Slack workspaces of one app, a Meta app's pages). */
  ids: 1_000,
  /** Secrets per field at once: the current one and the one it replaced, inside its overlap. */
  secretsPerField: 2,
  secretChars: 512,
  /** A whole edge record as JSON: far under KV's 25 MiB; what one KV read costs. */
  recordBytes: 128 * 1024,
} as const

export const ConnectionStatusSchema = v.picklist(['active', 'disabled'])
export type ConnectionStatus = v.InferOutput<typeof ConnectionStatusSchema>

/** One secret as the edge holds it: sealed with EDGE_KEKS under {@link secretAad}. */
export const EdgeSecretSchema = v.strictObject({
  field: v.pipe(v.string(), v.regex(/^[a-z_]{1,32}$/)),
  /** The secret's id: rotation adds a kid; the AAD names it. */
  kid: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,32}$/)),
  /** When a replaced secret stops verifying (absolute, RFC 3339); null for the current one. */
  notAfter: v.nullable(v.pipe(v.string(), v.isoTimestamp())),
  sealed: v.pipe(v.string(), v.maxLength(16 * 1024)),
})
export type EdgeSecret = v.InferOutput<typeof EdgeSecretSchema>

/** The KV value of `conn:<id>`: everything the Worker needs to verify and scope one request. */
export const EdgeConnectionSchema = v.strictObject({
  v: v.literal(1),
  id: v.pipe(v.string(), v.regex(CONNECTION_ID)),
  channel: v.picklist(CONNECTION_CHANNELS),
  account: v.pipe(v.string(), v.minLength(1), v.maxLength(320)),
  ids: v.pipe(v.array(v.pipe(v.string(), v.maxLength(320))), v.maxLength(CONNECTION_LIMITS.ids)),
  settings: v.record(v.string(), v.pipe(v.string(), v.maxLength(512))),
  status: ConnectionStatusSchema,
  /** The registry's version of this connection: every change adds one; the Worker reports it. */
  version: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
  secrets: v.array(EdgeSecretSchema),
})
export type EdgeConnection = v.InferOutput<typeof EdgeConnectionSchema>

/** KV keys: the record by id, and an index entry (whose value is a connection id). */
export const kvKeys = {
  connection: (id: string) => `conn:${id}`,
  index: (channel: ConnectionChannel, externalId: string) => `idx:${channel}:${externalId}`,
} as const

/**
 * The additional data a secret is sealed under, at rest and at the edge alike (the keys differ):
 * a sealed secret opens only as this connection's field and kid.
 */
export function secretAad(connectionId: string, field: string, kid: string): string {
  return `conn:v1|${connectionId}|${field}|${kid}`
}

/** Whether a secret verifies at `now`: the current one always, a replaced one until its notAfter. */
export function secretLive(secret: Pick<EdgeSecret, 'notAfter'>, nowMs: number): boolean {
  return secret.notAfter === null || Date.parse(secret.notAfter) > nowMs
}

/** What an event says of the connection that verified it (the origin refuses a disabled one's). */
export const EventConnectionSchema = v.strictObject({
  id: v.pipe(v.string(), v.regex(CONNECTION_ID)),
  version: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
})
export type EventConnection = v.InferOutput<typeof EventConnectionSchema>

export { ANY_ID as CONNECTION_ANY_ID }
