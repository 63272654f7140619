/**
 * Verifying a Teams activity (teams.ts is the channel): the `Authorization: Bearer` JWT, signed
 * (RS256) by a key of the Bot Framework's JWKS (teams-keys.ts), its issuer, audience (one of the
 * bots), expiry and `serviceurl` claim, and the key endorsing the activity's `channelId`. Every
 * refusal is a 403.
 * @module
 */
import { decodeProtectedHeader, jwtVerify } from 'jose'
import { ForbiddenError } from '../errors'
import type { TenantVerdict } from '../tenants'
import type { BotKeyCache } from './teams-keys'
import type { RequestParts } from './types'
import { parseJsonObject, str } from './untrusted'

/** What verifying an activity needs: the channel's settings (teams.ts reads them). */
export interface TeamsConfig {
  /** The bots' Microsoft App IDs: each one a tenant, the audience its tokens must name. */
  appIds: readonly string[]
  /** Where the signing keys are found (Microsoft's, or a local one in tests). */
  keys: BotKeyCache
}

export const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com'
/** The skew the doc and the SDK allow. */
export const TEAMS_CLOCK_SKEW_SECONDS = 5 * 60

/** Every refusal is a 403 (the doc's answer); the reason goes to the log only. */
function refuse(reason: string): never {
  throw new ForbiddenError(`teams: ${reason}`)
}

/**
 * The token, then the activity it was sent with: the token does not sign the body, so the body's
 * `channelId` and `serviceUrl` must be what the token's key and claim vouch for.
 */
export async function verifyTeams(
  parts: RequestParts,
  config: TeamsConfig,
): Promise<TenantVerdict> {
  const token = /^Bearer ([A-Za-z0-9._-]{1,8192})$/.exec(
    parts.headers.get('authorization') ?? '',
  )?.[1]
  if (!token) refuse('missing_token')
  let kid: string | undefined
  try {
    const header = decodeProtectedHeader(token)
    kid = header.alg === 'RS256' && typeof header.kid === 'string' ? header.kid : undefined
  } catch {
    refuse('malformed_token')
  }
  if (!kid) refuse('unsupported_token_header')
  const key = await config.keys.key(kid)
  if (!key) refuse('unknown_key')
  const claims = await jwtVerify(token, key.key, {
    issuer: BOT_FRAMEWORK_ISSUER,
    audience: [...config.appIds],
    algorithms: ['RS256'],
    clockTolerance: TEAMS_CLOCK_SKEW_SECONDS,
    requiredClaims: ['exp'],
  }).then(
    (verified) => verified.payload,
    (err: unknown) => refuse(`token_${(err as { code?: string }).code ?? 'invalid'}`),
  )
  const activity = parseJsonObject(parts.body.text, 'teams activity')
  const channelId = str(activity.channelId)
  if (!channelId || !key.endorsements.has(channelId)) refuse('channel_not_endorsed')
  if (str(claims.serviceurl) !== str(activity.serviceUrl)) refuse('service_url_mismatch')
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud]
  const bot = config.appIds.find((id) => audiences.includes(id))
  if (!bot) refuse('audience_mismatch')
  return { ok: true, tenant: bot }
}
