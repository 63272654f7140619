/**
 * The Messenger Platform's webhook events, which Messenger (`object: page`) and Instagram
 * messaging (`object: instagram`) share: `entry[]` (a Page or an Instagram account each), each with
 * `messaging[]` (one event) or, under the handover protocol, `standby[]` (the same events seen by
 * an app that does not hold the thread). One POST batches up to 1,000 of them; each is its own
 * delivery (worker/deliver-batch.ts), as WhatsApp Cloud's are. Each channel file (messenger.ts,
 * instagram.ts) is one {@link metaMessagingChannel}: its name (also its event channel, its path
 * and its key namespace), its `object` and its variables' names.
 *
 * Keys (docs/keys.md's key table), `{account}` the Page or Instagram account id (`entry[].id`, the
 * tenant): a message `{ns}:{account}:{mid}`, stored under `{account}:{mid}`, so its `standby` copy
 * and Meta's retries are one row; an edit `{ns}-edit:{account}:{mid}:{num_edit}` and a delete
 * (Instagram's `is_deleted`) `{ns}-delete:{account}:{mid}`, both under the message's key; reads,
 * deliveries and reactions recorded under `{ns}-status:…`, never rows; a postback (a button
 * press) a row of its own under its `mid`. One event: meta-events.ts. The Page's own messages and
 * edits are no inbound message; what Meta documents as no message is this channel's `ignored`.
 * @module
 */
import { channelTtlSetting } from '../../claims'
import { keyPart } from '../../contract/delivery-key'
import { InvalidPayloadError } from '../errors'
import {
  eventDelivery,
  type META_NON_MESSAGE_FIELDS,
  type MetaMessagingChannel,
  Scope,
} from './meta-events'
import {
  META_MAX_BODY_BYTES,
  type MetaAppConfig,
  metaAppConfig,
  verifyHandshake,
  verifyMetaSignature,
} from './meta-webhook'
import { plainReplies } from './replies'
import { sharedSecretRow, tenantSecretsRow } from './tenant-secrets'
import type { ChannelDelivery, Classified, WebhookChannel } from './types'
import { list, obj, parseJsonObject, vendorId } from './untrusted'

export type { MetaMessagingChannel } from './meta-events'

type Json = Record<string, unknown>

/** Meta batches at most 1,000 updates in one POST. */
export const MAX_MESSAGING_ITEMS = 1_000

/**
 * What Meta documents as no message, by `ignore` reason (`{namespace}_…`): answered "ok", nothing
 * kept. Reads, deliveries and reactions are recorded instead (never rows); anything else is kept.
 */
function ignoredOf(ns: string): Record<string, string> {
  const fields: Record<(typeof META_NON_MESSAGE_FIELDS)[number], string> = {
    optin: 'a person opted in (a plugin, a notification request, a marketing opt-in)',
    referral: 'a person came into an existing thread through a link, an ad or a plugin',
    account_linking: 'a person linked or unlinked their account',
    pass_thread_control: 'the handover protocol passed the thread to an app',
    take_thread_control: 'the handover protocol took the thread from an app',
    request_thread_control: 'an app asked for the thread (handover protocol)',
    app_roles: "the Page's apps' roles changed (handover protocol)",
    policy_enforcement: 'Meta warned, blocked or unblocked the app',
    game_play: 'a person played a round of an Instant Game',
  }
  return {
    [`${ns}_no_events`]: 'a POST without messaging events',
    [`${ns}_echo`]: "the Page's or account's own message (its echo): no customer's",
    [`${ns}_echo_edit`]: "the Page's or account's own message edited",
    ...Object.fromEntries(Object.entries(fields).map(([field, what]) => [`${ns}_${field}`, what])),
  }
}

/** Every messaging event (and standby copy) of every entry, each its own delivery. */
export async function classifyMetaMessaging(
  body: Json,
  channel: MetaMessagingChannel,
): Promise<Classified> {
  const ns = channel.namespace
  if (body.object !== channel.object)
    return { action: 'unrecognized', reason: `${ns}_other_object` }
  const perEntry = await Promise.all(
    list(body.entry).map((entry) => entryDeliveries(obj(entry), channel)),
  )
  const items = perEntry.flat()
  const keyed = items.filter((item) => item.action !== 'ignore').length
  if (keyed > MAX_MESSAGING_ITEMS) throw new InvalidPayloadError(`${ns} batch too large`)
  return items.length > 0 ? items : { action: 'ignore', reason: `${ns}_no_events` }
}

async function entryDeliveries(
  entry: Json | null,
  channel: MetaMessagingChannel,
): Promise<ChannelDelivery[]> {
  const account = vendorId(entry?.id, 64)
  // Unkeyable (Meta documents it always present): kept whole, never guessed at.
  if (!entry || account === null) {
    const payload = JSON.stringify({ object: channel.object, entry: [entry] })
    return [{ action: 'unrecognized', reason: `${channel.namespace}_entry_without_id`, payload }]
  }
  const scope = new Scope(channel, account, await keyPart(account))
  const events = [...list(entry.messaging), ...list(entry.standby)]
  return Promise.all(events.map((event) => eventDelivery(scope, obj(event))))
}

/**
 * A Messenger Platform channel's rows (`{PREFIX}_…`): the app secrets of a single app, each app's
 * own, the verify token, the account ids (Pages, Instagram accounts) each app writes for, and
 * its dedup TTL.
 */
function metaMessagingVariables<const P extends string, const I extends string>(
  prefix: P,
  ids: { name: I; noun: string },
) {
  return [
    sharedSecretRow(`${prefix}_APP_SECRET`, 'app secrets of a single app: any account'),
    tenantSecretsRow(`${prefix}_APP_SECRETS_BY_APP`, 'each app id its own app secrets'),
    sharedSecretRow(`${prefix}_VERIFY_TOKEN`, "the Dashboard's verify token(s) for the handshake"),
    tenantSecretsRow(ids.name, `the ${ids.noun}s each app writes for`),
    // Meta retries a failed delivery for 36 hours, then drops it: half a day more covers it.
    channelTtlSetting(`DEDUP_TTL_SECONDS_${prefix}`, 48 * 3_600),
  ] as const
}

/**
 * The webhook channel of one `object`: Meta's handshake and signature (meta-webhook.ts), this
 * module's events, its variables named by `prefix`.
 */
export function metaMessagingChannel<
  const Name extends string,
  const P extends string,
  const I extends string,
>(spec: {
  name: Name
  object: string
  /** Its variables' prefix (`MESSENGER`). */
  prefix: P
  /** The variable of the account ids each app writes for, and what they are ('Page id'). */
  ids: { name: I; noun: string }
}) {
  const variables = metaMessagingVariables(spec.prefix, spec.ids)
  const [appSecret, appSecretsByApp, verifyToken, idsByApp, dedupTtl] = variables
  const rows = { appSecret, appSecretsByApp, verifyToken, idsByApp, idNoun: spec.ids.noun }
  const channel = { object: spec.object, channel: spec.name, namespace: spec.name }
  const webhook: WebhookChannel<Name, MetaAppConfig, Json, typeof variables> = {
    name: spec.name,
    eventChannels: [spec.name],
    variables,
    dedupTtl,
    paths: [`/${spec.name}`],
    // Messenger wants a 200 within seconds (third parties: 5 s): Meta's budget, as WhatsApp's.
    budgetMs: 2_500,
    maxBodyBytes: META_MAX_BODY_BYTES,
    settings: (env, warnings) => metaAppConfig(env, rows, warnings),
    handshake: (query, config) => verifyHandshake(query, config.verifyTokens),
    verify: (parts, config) => verifyMetaSignature(parts, config.appSecrets, config.idsByApp),
    parse: (parts) => parseJsonObject(parts.body.text, `${spec.name} body`),
    classify: (payload) => classifyMetaMessaging(payload, channel),
    ignored: ignoredOf(channel.namespace),
    replies: plainReplies,
  }
  return webhook
}
