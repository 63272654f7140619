/**
 * What every Meta webhook shares (WhatsApp Cloud, Messenger, Instagram: one "Webhooks" product of
 * a Meta app): the GET subscription handshake that echoes `hub.challenge`, and the POST's
 * `X-Hub-Signature-256`, an HMAC of the body under the app secret. The body names no app, so with
 * several apps every app's secrets are tried, all of them, each in constant time; the app whose
 * secret matched is the tenant, and the ids it writes for (phone numbers, pages, Instagram
 * accounts) are the scopes its items may be keyed under.
 * @module
 */
import { type Bytes, equalsAny, hmac, secretList, toHex } from '../../shared/crypto'
import { rawValue, type StringEnv, type TextSetting } from '../../shared/settings'
import type { TenantSecrets } from './tenant-secrets'
import { matchingTenant, tenantIds, tenantSecrets } from './tenant-secrets'
import type { ChannelConfig, HandshakeVerdict, RequestParts, TenantVerdict } from './types'

/** A Meta channel's settings: whose secrets verify, for which ids, and the handshake's token. */
export interface MetaAppConfig {
  /** Shared (any id), or by app id: each app its own app secrets. */
  appSecrets: TenantSecrets
  /** By app id: the ids each app writes for (phone_number_ids, page ids, Instagram ids). */
  idsByApp: ReadonlyMap<string, ReadonlySet<string>>
  /** The App Dashboard's verify token(s) for the GET handshake. */
  verifyTokens: readonly string[]
}

/** A Meta channel's variables: its rows, in its own file (they are its documentation). */
export interface MetaAppVariables {
  /** The app secrets of a single app (any id). */
  appSecret: TextSetting
  /** `APP_ID=secret1|secret2,...`: each app its own. */
  appSecretsByApp: TextSetting
  verifyToken: TextSetting
  /** `APP_ID=id1|id2,...`: the ids each app writes for, required with several apps. */
  idsByApp: TextSetting
  /** What those ids are, in warnings ('phone_number_id', 'page id'). */
  idNoun: string
}

/** "Webhook payloads can be up to 3 MB" (Meta, for batches of up to 1,000 updates). */
export const META_MAX_BODY_BYTES = 3 * 1024 * 1024

const NUMERIC_ID = /^\d{1,20}$/
/** Meta's ids (apps, phone numbers, pages, Instagram accounts) are decimal numbers. */
export const isMetaId = (id: string): boolean => NUMERIC_ID.test(id)
const APP_ID = { test: isMetaId, hint: 'a numeric Meta id' }

/** The settings of a Meta channel; what is missing by variable name. */
export function metaAppConfig(
  env: StringEnv,
  variables: MetaAppVariables,
  warnings: string[],
): ChannelConfig<MetaAppConfig> {
  const { appSecret, appSecretsByApp, verifyToken, idsByApp, idNoun } = variables
  const secrets = tenantSecrets(
    env,
    { perTenant: appSecretsByApp, shared: appSecret, rule: APP_ID },
    warnings,
  )
  const verifyTokens = secretList(rawValue(env, verifyToken.name))
  const apps =
    secrets.ok && secrets.value.kind === 'per-tenant' ? [...secrets.value.byTenant.keys()] : []
  const ids =
    (apps.length > 0 &&
      tenantIds(
        idsByApp.name,
        rawValue(env, idsByApp.name),
        apps,
        APP_ID,
        { noun: idNoun, isValid: isMetaId },
        warnings,
      )) ||
    new Map<string, ReadonlySet<string>>()
  const missing = [
    ...(secrets.ok ? [] : secrets.missing),
    ...(verifyTokens.length > 0 ? [] : [verifyToken.name]),
    ...(apps.length > 0 && ids.size === 0 ? [idsByApp.name] : []),
  ]
  if (!secrets.ok || missing.length > 0) return { ok: false, missing }
  return { ok: true, value: { appSecrets: secrets.value, idsByApp: ids, verifyTokens } }
}

/** `hub.mode=subscribe` with a configured `hub.verify_token`: echo `hub.challenge`, opaque. */
export function verifyHandshake(
  query: URLSearchParams,
  verifyTokens: readonly string[],
): HandshakeVerdict {
  const token = query.get('hub.verify_token')
  const challenge = query.get('hub.challenge')
  if (query.get('hub.mode') !== 'subscribe' || !token || !challenge) {
    return { ok: false, reason: 'not_a_subscription' }
  }
  if (challenge.length > 256) return { ok: false, reason: 'challenge_too_long' }
  return equalsAny(verifyTokens, token)
    ? { ok: true, challenge }
    : { ok: false, reason: 'verify_token_mismatch' }
}

/** `sha256=` + hex HMAC-SHA256(app secret, the body's exact bytes): never re-serialised. */
export async function metaSignature(secret: string, body: Bytes | string): Promise<string> {
  return `sha256=${toHex(await hmac(secret, 'SHA-256', body))}`
}

/**
 * Verifies `X-Hub-Signature-256` over the raw bytes, before anything is parsed: every app's
 * secrets are tried; the matching app is the tenant, its ids the scopes (an app `idsByApp` does
 * not list writes for none: its items are refused, nothing written).
 */
export async function verifyMetaSignature(
  parts: RequestParts,
  appSecrets: TenantSecrets,
  idsByApp: ReadonlyMap<string, ReadonlySet<string>>,
): Promise<TenantVerdict> {
  const offered = parts.headers.get('x-hub-signature-256')?.trim().toLowerCase()
  if (!offered) return { ok: false, reason: 'missing_headers' }
  if (!offered.startsWith('sha256=')) return { ok: false, reason: 'unknown_signature_version' }
  const matches = async (list: readonly string[]) =>
    equalsAny(await Promise.all(list.map((s) => metaSignature(s, parts.body.bytes))), offered)
  const app = await matchingTenant(appSecrets, matches)
  if (app === undefined) return { ok: false, reason: 'signature_mismatch' }
  if (app === null) return { ok: true, tenant: null }
  return { ok: true, tenant: app, scopes: idsByApp.get(app) ?? new Set() }
}
