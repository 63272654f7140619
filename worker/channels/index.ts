/**
 * The webhook channels. worker/routes.ts serves each one, worker/config.ts parses each one's
 * settings, /healthz reports each one, and each one's `variables` are its rows of the Worker's
 * settings table (worker/settings.ts: the bindings' types, `npm run dev`'s routing, the docs
 * check). A new channel is one file in this folder (its {@link WebhookChannel} object, on the
 * channel kit, types.ts) and one line below (its `eventChannels` may be names no other channel
 * writes: contract/event.ts takes any name of CHANNEL_NAME's form, and so does the database),
 * plus its rows in docs/ (the key table of keys.md, its variables in configuration.md) and its
 * secrets in `.dev.vars.example` (test/local/settings-docs.test.ts fails until they are). Email
 * is no webhook: Cloudflare Email Routing calls the Worker's `email()` (worker/email.ts, beside
 * the webhook routes).
 * @module
 */
import type { Channel } from '../../contract/event'
import { instagram } from './instagram'
import { line } from './line'
import { messenger } from './messenger'
import { slack } from './slack'
import { teams } from './teams'
import { telegram } from './telegram'
import { twilio } from './twilio'
import type { WebhookChannel } from './types'
import { wechat } from './wechat'
import { whatsappCloud } from './whatsapp-cloud'

export const WEBHOOK_CHANNELS = [
  slack,
  twilio,
  telegram,
  whatsappCloud,
  line,
  messenger,
  instagram,
  wechat,
  teams,
] as const satisfies readonly WebhookChannel[]

type Registered = (typeof WEBHOOK_CHANNELS)[number]
export type WebhookChannelName = Registered['name']
/** Each channel's settings under its name: part of worker/config.ts's Settings. */
export type ChannelSettings = { [C in Registered as C['name']]: ReturnType<C['settings']> }
/** A row some channel declares. */
export type ChannelSettingRow = Registered['variables'][number]
/** Every channel's rows, in registry order. */
export const CHANNEL_SETTINGS: readonly ChannelSettingRow[] = WEBHOOK_CHANNELS.flatMap(
  (channel): readonly ChannelSettingRow[] => channel.variables,
)
/**
 * Every event channel this Worker writes, each once: its webhook channels', email's (the email()
 * handler) and the API's (worker/api/, POST /v1/messages).
 */
export const EVENT_CHANNELS: readonly Channel[] = [
  ...new Set([...WEBHOOK_CHANNELS.flatMap((channel) => channel.eventChannels), 'email', 'api']),
]
