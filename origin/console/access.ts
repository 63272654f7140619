/**
 * Cloudflare Access's assertion as a console sign-in. Access puts a JWT in the
 * `Cf-Access-Jwt-Assertion` header of every request it lets through to the origin; it is
 * verified here with `jose` against the team's published keys (`{team}/cdn-cgi/access/certs`,
 * fetched with a timeout and a size bound, cached for a bounded time, fetched again at most every
 * 30 s for an unknown key id, so forged key ids cannot make it fetch on every request): RS256
 * only, the issuer the team domain, the audience one of the application's AUD tags, `exp` and
 * `nbf` checked. Its email (and groups, when the identity provider passes a `groups` claim) then
 * map to the operator or viewer role. A header is only as good as the path it came by: the
 * origin must be reachable only through Access when this is on (docs/deploying.md).
 * @module
 */
import {
  createRemoteJWKSet,
  customFetch,
  type JWSHeaderParameters,
  type JWTPayload,
  jwtVerify,
} from 'jose'
import { BodyOverLimitError, readBoundedBody } from '../../shared/body'
import type { AccessConfig, AccessRule, Role } from './settings'

export const ACCESS_HEADER = 'cf-access-jwt-assertion'

/** Access's assertions are about 1 KB; a header past this is not one, and is not parsed. */
const MAX_ASSERTION_CHARS = 8_192
/** The team's key set is a few keys; an answer past this is refused. */
const MAX_KEYS_BYTES = 64 * 1024
const KEYS_TIMEOUT_MS = 3_000
/** Keys are used this long before they are fetched again (Access rotates its keys every 6 weeks). */
const KEYS_MAX_AGE_MS = 10 * 60_000
/** An assertion signed with a key not in the set fetches the set again at most this often. */
const KEYS_COOLDOWN_MS = 30_000
/** Clocks of Cloudflare and the origin may differ by this much. */
const CLOCK_TOLERANCE_SECONDS = 30
const MAX_GROUPS = 200

export interface AccessIdentity {
  /** Lower case. */
  email: string
  role: Role
}

export type AccessVerdict =
  | { ok: true; identity: AccessIdentity }
  /** missing: no header; refused: not a valid assertion for this application; no_role: valid,
   * but nobody gave this person a console role; unavailable: the keys could not be fetched. */
  | { ok: false; reason: 'missing' | 'refused' | 'no_role' | 'unavailable'; email?: string }

export interface AccessVerifier {
  verify(assertion: string | undefined): Promise<AccessVerdict>
}

/** The team's key set, read with a bound: jose fetches through this. */
async function boundedFetch(url: string, init: RequestInit): Promise<Response> {
  const response = await fetch(url, init)
  if (response.status !== 200) return response
  try {
    const { text } = await readBoundedBody(response, MAX_KEYS_BYTES)
    return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } })
  } catch (err) {
    if (err instanceof BodyOverLimitError) return new Response('key set too large', { status: 502 })
    throw err
  }
}

/** The key set could not be had (a timeout, a network error, an answer that is not a key set). */
class KeysUnavailableError extends Error {}

/** The key lookups that say something about the assertion itself, not about the key set. */
const ASSERTION_KEY_ERRORS = new Set([
  'ERR_JWKS_NO_MATCHING_KEY',
  'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
])

export function accessVerifier(config: AccessConfig): AccessVerifier {
  const remote = createRemoteJWKSet(new URL(config.certsUrl), {
    timeoutDuration: KEYS_TIMEOUT_MS,
    cacheMaxAge: KEYS_MAX_AGE_MS,
    cooldownDuration: KEYS_COOLDOWN_MS,
    [customFetch]: boundedFetch,
  })
  const keys = async (header: JWSHeaderParameters) => {
    try {
      return await remote(header)
    } catch (err) {
      const code = (err as { code?: unknown }).code
      if (typeof code === 'string' && ASSERTION_KEY_ERRORS.has(code)) throw err
      throw new KeysUnavailableError('the team key set could not be fetched', { cause: err })
    }
  }
  return {
    async verify(assertion) {
      if (!assertion) return { ok: false, reason: 'missing' }
      if (assertion.length > MAX_ASSERTION_CHARS) return { ok: false, reason: 'refused' }
      let payload: JWTPayload
      try {
        ;({ payload } = await jwtVerify(assertion, keys, {
          algorithms: ['RS256'],
          issuer: config.issuer,
          audience: config.audiences,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ['exp', 'iat'],
        }))
      } catch (err) {
        return {
          ok: false,
          reason: err instanceof KeysUnavailableError ? 'unavailable' : 'refused',
        }
      }
      const email = typeof payload.email === 'string' ? payload.email.toLowerCase() : ''
      if (!/^[^@\s]{1,64}@[^@\s]{1,253}$/.test(email)) return { ok: false, reason: 'refused' }
      const role = roleOf(config, email, groupsOf(payload))
      if (!role) return { ok: false, reason: 'no_role', email }
      return { ok: true, identity: { email, role } }
    },
  }
}

/** `groups`, or `custom.groups` (an identity provider's claim passed on by Access), if strings. */
function groupsOf(payload: JWTPayload): string[] {
  const custom = payload.custom as { groups?: unknown } | undefined
  const raw = payload.groups ?? custom?.groups
  const list = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : []
  return list.filter((g): g is string => typeof g === 'string').slice(0, MAX_GROUPS)
}

function matches(rule: AccessRule, email: string, groups: readonly string[]): boolean {
  switch (rule.kind) {
    case 'email':
      return rule.email === email
    case 'domain':
      return email.endsWith(`@${rule.domain}`)
    case 'group':
      return groups.includes(rule.group)
  }
}

/** Operator when an operator rule matches, else viewer when a viewer rule does, else none. */
export function roleOf(
  config: AccessConfig,
  email: string,
  groups: readonly string[],
): Role | null {
  if (config.operators.some((rule) => matches(rule, email, groups))) return 'operator'
  if (config.viewers.some((rule) => matches(rule, email, groups))) return 'viewer'
  return null
}
