/**
 * Slack: Events API callbacks and interactivity posts.
 *
 * Keys (see docs/keys.md's key table):
 * - delivery: `dedup:slack:{api_app_id}:{event_id}`; Slack retries carry the same `event_id`.
 *   Without an `event_id` (old payloads did that) a hash of team|type|channel|event_ts|ts stands in.
 * - message: `{team_id}:{channel}:{ts}` (`message.ts` for edits, `deleted_ts` for deletes): Slack
 *   may send one message under several event ids (`message` + `app_mention`, incidents), which
 *   Postgres catches on this key.
 * - interactions: `dedup:slack-interaction:{api_app_id}:{trigger_id}`: a button press in a message
 *   is a row of its own, the app's own UI is recorded (slack-interactions.ts).
 * What Slack documents as no message is this channel's `ignored` (slack-ignored.ts); anything
 * else is kept as unrecognized.
 * A message, edit or delete is drafted in slack-messages.ts: its `files[]` (subtype `file_share`)
 * become its attachments (slack-files.ts); its body is its text, then the messages it forwards,
 * quoted (slack-body.ts).
 * @module
 */

import { channelTtlSetting } from '../../claims'
import { keyPart } from '../../contract/delivery-key'
import type { RawBody } from '../../shared/body'
import { sha256Hex } from '../../shared/crypto'
import { rawValue, type StringEnv } from '../../shared/settings'
import { InvalidPayloadError } from '../errors'
import { plainReplies } from './replies'
import { SLACK_IGNORED } from './slack-ignored'
import { classifyInteraction } from './slack-interactions'
import { messageDraft } from './slack-messages'
import { verifySlack } from './slack-signature'
import type { TenantSecrets, TenantVariables } from './tenant-secrets'
import {
  allSecrets,
  sharedSecretRow,
  tenantIds,
  tenantSecrets,
  tenantSecretsRow,
  verifyForTenant,
} from './tenant-secrets'
import type {
  ChannelConfig,
  Delivery,
  DeliveryKey,
  RequestParts,
  TenantVerdict,
  VerifyOptions,
  WebhookChannel,
} from './types'
import { formatDeliveryKey } from './types'
import { isKeyPart, obj, parseJsonObject, reasonPart, str, vendorId } from './untrusted'

export interface SlackConfig {
  /** By `api_app_id` (SLACK_SIGNING_SECRETS_BY_APP), or shared (SLACK_SIGNING_SECRET). */
  signingSecrets: TenantSecrets
  /**
   * By `api_app_id`: the workspaces (`team_id`) each app writes for (SLACK_TEAMS_BY_APP); null:
   * any workspace (the shared secret, or a single app without the map).
   */
  teams: ReadonlyMap<string, ReadonlySet<string>> | null
}

const SLACK_VARIABLES = [
  sharedSecretRow('SLACK_SIGNING_SECRET', 'signing secrets of a single tenant: any api_app_id'),
  tenantSecretsRow('SLACK_SIGNING_SECRETS_BY_APP', 'each api_app_id its own signing secrets'),
  channelTtlSetting('DEDUP_TTL_SECONDS_SLACK'),
  tenantSecretsRow('SLACK_TEAMS_BY_APP', 'the team_ids (workspaces) each api_app_id writes for'),
] as const
const SLACK_TEAMS_BY_APP = SLACK_VARIABLES[3]

const SLACK_SECRETS: TenantVariables = {
  shared: SLACK_VARIABLES[0],
  perTenant: SLACK_VARIABLES[1],
  rule: { test: (id) => /^A[A-Z0-9]{1,31}$/.test(id), hint: 'a Slack app id (A…)' },
}
/** Workspace ids: `T…`, or `E…` for an Enterprise Grid organization. */
const TEAM_ID = { noun: 'team_id', isValid: (id: string) => /^[TE][A-Z0-9]{1,31}$/.test(id) }

/** Slack waits 3 s for an answer, then retries in parallel: answer within 2.5 s. */
export const slack: WebhookChannel<'slack', SlackConfig, SlackPayload, typeof SLACK_VARIABLES> = {
  name: 'slack',
  eventChannels: ['slack'],
  variables: SLACK_VARIABLES,
  dedupTtl: SLACK_VARIABLES[2],
  paths: ['/slack'],
  budgetMs: 2_500,
  settings: slackConfig,
  verify: (parts, config) => verifySlackTenant(parts, config.signingSecrets, {}, config.teams),
  parse: (parts) => parseSlack(parts.body, parts.headers.get('content-type')),
  classify: (payload) => classifySlack(payload),
  ignored: SLACK_IGNORED,
  replies: plainReplies,
}

/**
 * The secrets, and the workspaces each app writes for: the body names the workspace (`team_id`),
 * and an app's signature must not vouch for a workspace it is not installed in. Several apps
 * without SLACK_TEAMS_BY_APP leave the channel unconfigured (503), never open to any workspace;
 * one app (or the shared secret) without it writes for any workspace, as a single-tenant
 * deployment always did.
 */
function slackConfig(env: StringEnv, warnings: string[]): ChannelConfig<SlackConfig> {
  const secrets = tenantSecrets(env, SLACK_SECRETS, warnings)
  if (!secrets.ok) return secrets
  const signingSecrets = secrets.value
  const raw = rawValue(env, SLACK_TEAMS_BY_APP.name)
  if (signingSecrets.kind === 'shared') {
    if (raw?.trim())
      warnings.push(`SLACK_TEAMS_BY_APP is ignored without ${SLACK_SECRETS.perTenant.name}`)
    return { ok: true, value: { signingSecrets, teams: null } }
  }
  const apps = [...signingSecrets.byTenant.keys()]
  const teams = tenantIds(SLACK_TEAMS_BY_APP.name, raw, apps, SLACK_SECRETS.rule, TEAM_ID, warnings)
  if (teams === null ? apps.length > 1 : teams.size === 0) {
    return { ok: false, missing: [SLACK_TEAMS_BY_APP.name] }
  }
  return { ok: true, value: { signingSecrets, teams } }
}

/**
 * Verifies with the secrets of the app the body names (`api_app_id`, read before verification as
 * an untrusted hint: it only picks the secrets). A body that names no app (the url_verification
 * handshake) may match any configured app's secret, and is then good for the handshake only.
 */
export async function verifySlackTenant(
  parts: RequestParts,
  secrets: TenantSecrets,
  options: VerifyOptions = {},
  /** The workspaces each app writes for; null: any. */
  teams: SlackConfig['teams'] = null,
): Promise<TenantVerdict> {
  // Shared secrets verify any app: nothing to read before the signature then.
  const appId = secrets.kind === 'shared' ? null : slackAppIdOf(parts)
  if (appId === null && secrets.kind === 'per-tenant') {
    const verdict = await verifySlack(parts, allSecrets(secrets), options)
    return verdict.ok ? { ok: true, tenant: null, handshakeOnly: true } : verdict
  }
  const verdict = await verifyForTenant(secrets, appId, (list) => verifySlack(parts, list, options))
  if (!verdict.ok || teams === null || verdict.tenant === null) return verdict
  return { ...verdict, writesFor: teams.get(verdict.tenant) ?? new Set() }
}

/**
 * The `api_app_id` of an unverified body, read the way {@link parseSlack} and
 * {@link classifySlack} read it (so the app that verified is the app the keys name); null when
 * the body is not parseable or names no valid app id.
 */
export function slackAppIdOf(parts: RequestParts): string | null {
  try {
    const payload = parseSlack(parts.body, parts.headers.get('content-type'))
    const appId =
      payload.kind === 'json'
        ? payload.body.api_app_id
        : payload.kind === 'interaction'
          ? payload.payload.api_app_id
          : payload.form.get('api_app_id')
    const id = str(appId)
    return isKeyPart(id) ? id : null
  } catch {
    return null
  }
}

/** A parsed Slack body: Events API JSON, or a form post (interactivity `payload=`, commands). */
export type SlackPayload =
  | { kind: 'json'; body: Record<string, unknown> }
  | { kind: 'interaction'; payload: Record<string, unknown> }
  | { kind: 'form'; form: URLSearchParams }

export function parseSlack(body: RawBody, contentType: string | null): SlackPayload {
  if ((contentType ?? '').toLowerCase().includes('application/x-www-form-urlencoded')) {
    const form = new URLSearchParams(body.text)
    const payload = form.get('payload')
    if (payload === null) return { kind: 'form', form }
    return { kind: 'interaction', payload: parseJsonObject(payload, 'slack interactivity payload') }
  }
  return { kind: 'json', body: parseJsonObject(body.text, 'slack body') }
}

export async function classifySlack(payload: SlackPayload): Promise<Delivery> {
  // A slash command (its text is the person's): not served here, so kept, never dropped.
  if (payload.kind === 'form') return { action: 'unrecognized', reason: 'slack_form_post' }
  if (payload.kind === 'interaction') return classifyInteraction(payload.payload)

  const body = payload.body
  const type = str(body.type)
  if (type === 'url_verification') {
    const challenge = str(body.challenge)
    if (!challenge) throw new InvalidPayloadError('url_verification without a challenge')
    return { action: 'challenge', challenge }
  }
  if (type === 'app_rate_limited') return { action: 'ignore', reason: 'app_rate_limited' }
  if (type !== 'event_callback') {
    return { action: 'unrecognized', reason: `slack_type_${reasonPart(type)}` }
  }

  const event = obj(body.event)
  const appId = vendorId(body.api_app_id, 64)
  const teamId = vendorId(body.team_id, 64)
  if (!event || !appId || !teamId) {
    return { action: 'unrecognized', reason: 'slack_event_callback_unplaced' }
  }
  const eventType = str(event.type)
  if (eventType !== 'message' && eventType !== 'app_mention') {
    return { action: 'ignore', reason: `slack_event_${reasonPart(eventType)}` }
  }

  const draft = messageDraft(teamId, event)
  if ('ignore' in draft) return { action: 'ignore', reason: draft.ignore }

  const eventId = vendorId(body.event_id)
  const appTag = await keyPart(appId)
  const scope = {
    namespace: 'slack',
    scope: appId,
    ...(appTag === appId ? {} : { scopeTag: appTag }),
  }
  const key: DeliveryKey = eventId
    ? { ...scope, id: await keyPart(eventId) }
    : { ...scope, id: `h${await fallbackId(teamId, event)}`, fallback: true }
  return {
    action: 'forward',
    key,
    draft: { ...draft, deliveryKey: formatDeliveryKey(key) },
  }
}

/** Slack's recommended stand-in for a missing event_id: sha256(team|type|channel|event_ts|ts). */
async function fallbackId(teamId: string, event: Record<string, unknown>): Promise<string> {
  const parts = [teamId, event.type, event.channel, event.event_ts, event.ts].map((p) =>
    typeof p === 'string' ? p : '',
  )
  return (await sha256Hex(parts.join('|'))).slice(0, 32)
}

export { SLACK_TOLERANCE_SECONDS, slackSignature, verifySlack } from './slack-signature'
