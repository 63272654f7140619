/**
 * The console's settings: who may sign in (OPERATOR_TOKEN, CONSOLE_TOKENS with names and roles;
 * with Cloudflare Access, whose assertion is a sign-in, the team, the application's audience and
 * who gets which role) and how long a session lasts. Problems name variables and entries by
 * position, never a token.
 * @module
 */
import { OPERATOR_TOKEN, OPERATOR_TOKEN_MIN_CHARS } from '../../shared/operator-token'
import { present, readInt, setting } from '../../shared/settings'
import { ConfigError, type OriginEnv } from '../config'

export const CONSOLE_TOKENS = setting({
  name: 'CONSOLE_TOKENS',
  kind: 'secret-list',
  secret: true,
  doc: 'more console sign-in tokens, comma-separated name:role:token (role viewer or operator)',
})
export const CONSOLE_SESSION_HOURS = setting({
  name: 'CONSOLE_SESSION_HOURS',
  kind: 'int',
  secret: false,
  default: 8,
  min: 1,
  max: 168,
  doc: 'a console session ends this long after sign-in',
})

export const CONSOLE_ACCESS_TEAM_DOMAIN = setting({
  name: 'CONSOLE_ACCESS_TEAM_DOMAIN',
  kind: 'string',
  secret: false,
  doc: 'Cloudflare Access team domain (https://<team>.cloudflareaccess.com): its assertion signs in to the console',
})
export const CONSOLE_ACCESS_AUD = setting({
  name: 'CONSOLE_ACCESS_AUD',
  kind: 'list',
  secret: false,
  doc: "the Application Audience (AUD) tag of the console's Access application; comma-separated for several",
})
export const CONSOLE_ACCESS_OPERATORS = setting({
  name: 'CONSOLE_ACCESS_OPERATORS',
  kind: 'list',
  secret: false,
  doc: 'who signs in with Access as operator: emails, @domain, group:<name>; comma-separated',
})
export const CONSOLE_ACCESS_VIEWERS = setting({
  name: 'CONSOLE_ACCESS_VIEWERS',
  kind: 'list',
  secret: false,
  doc: 'who signs in with Access as viewer: emails, @domain, group:<name>; comma-separated',
})

export const CONSOLE_SETTINGS = [
  OPERATOR_TOKEN,
  CONSOLE_TOKENS,
  CONSOLE_SESSION_HOURS,
  CONSOLE_ACCESS_TEAM_DOMAIN,
  CONSOLE_ACCESS_AUD,
  CONSOLE_ACCESS_OPERATORS,
  CONSOLE_ACCESS_VIEWERS,
] as const

export const ROLES = ['viewer', 'operator'] as const
export type Role = (typeof ROLES)[number]

/** A token that signs in: its name (for the audit) and role; the value stays in memory only. */
export interface ConsoleToken {
  name: string
  role: Role
  token: string
}

/** Who gets a role through Access: an email, every address of a `@domain`, or a `group:`. */
export type AccessRule =
  | { kind: 'email'; email: string }
  | { kind: 'domain'; domain: string }
  | { kind: 'group'; group: string }

/** Cloudflare Access as a sign-in (origin/console/access.ts). */
export interface AccessConfig {
  /** The assertion's issuer: the team domain, `https://<team>.cloudflareaccess.com`. */
  issuer: string
  /** The team's published keys: `{issuer}/cdn-cgi/access/certs`. */
  certsUrl: string
  audiences: string[]
  operators: AccessRule[]
  viewers: AccessRule[]
}

export interface ConsoleConfig {
  tokens: ConsoleToken[]
  sessionSeconds: number
  /** Null: no Access sign-in (tokens only). */
  access?: AccessConfig | null
}

const NAME = /^[A-Za-z0-9_.@-]{1,64}$/

/** The console's settings, or a ConfigError listing every bad entry. No token: nobody signs in. */
export function loadConsoleConfig(env: OriginEnv): ConsoleConfig {
  const problems: string[] = []
  const config = readConsoleConfig(env, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

function readConsoleConfig(env: OriginEnv, problems: string[]): ConsoleConfig {
  const tokens: ConsoleToken[] = []
  const operator = present(env, OPERATOR_TOKEN.name)
  if (operator) tokens.push({ name: 'operator', role: 'operator', token: operator })
  const entries = (present(env, CONSOLE_TOKENS.name) ?? '').split(',').filter((e) => e.trim())
  entries.forEach((entry, i) => {
    const [name = '', role = '', ...rest] = entry.trim().split(':')
    const token = rest.join(':')
    if (!NAME.test(name) || !(ROLES as readonly string[]).includes(role) || !token) {
      problems.push(
        `${CONSOLE_TOKENS.name} entry ${i + 1} must be name:role:token (role viewer or operator)`,
      )
    } else if (token.length < OPERATOR_TOKEN_MIN_CHARS) {
      problems.push(
        `${CONSOLE_TOKENS.name} entry ${i + 1}: the token needs ${OPERATOR_TOKEN_MIN_CHARS} characters or more`,
      )
    } else {
      tokens.push({ name, role: role as Role, token })
    }
  })
  const hours = readInt(env, CONSOLE_SESSION_HOURS, problems)
  return { tokens, sessionSeconds: hours * 3600, access: readAccessConfig(env, problems) }
}

const listOf = (env: OriginEnv, name: string) =>
  (present(env, name) ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)

/**
 * Cloudflare's team domains are `<team>.cloudflareaccess.com`, over HTTPS. A loopback address is
 * accepted too (a key set served on this machine: the tests, a local try): nothing else, so that
 * a typo cannot make the console trust keys from anywhere.
 */
function teamIssuer(raw: string): string | null {
  let url: URL
  try {
    url = new URL(/^[a-z]+:\/\//i.test(raw) ? raw : `https://${raw}`)
  } catch {
    return null
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)
  const cloudflare =
    url.protocol === 'https:' && /^[a-z0-9-]+\.cloudflareaccess\.com$/i.test(url.hostname)
  if (!cloudflare && !(loopback && /^https?:$/.test(url.protocol))) return null
  if (url.pathname !== '/' || url.search || url.hash || url.username) return null
  return url.origin
}

function accessRule(entry: string): AccessRule | null {
  if (/^group:.{1,256}$/.test(entry)) return { kind: 'group', group: entry.slice('group:'.length) }
  if (/^@[^@\s]{1,253}$/.test(entry))
    return { kind: 'domain', domain: entry.slice(1).toLowerCase() }
  if (/^[^@\s]{1,64}@[^@\s]{1,253}$/.test(entry))
    return { kind: 'email', email: entry.toLowerCase() }
  return null
}

function readAccessConfig(env: OriginEnv, problems: string[]): AccessConfig | null {
  const team = present(env, CONSOLE_ACCESS_TEAM_DOMAIN.name)
  const audiences = listOf(env, CONSOLE_ACCESS_AUD.name)
  const rules = (name: string) =>
    listOf(env, name).flatMap((entry, i) => {
      const rule = accessRule(entry)
      if (!rule) problems.push(`${name} entry ${i + 1} must be an email, @domain or group:<name>`)
      return rule ? [rule] : []
    })
  const operators = rules(CONSOLE_ACCESS_OPERATORS.name)
  const viewers = rules(CONSOLE_ACCESS_VIEWERS.name)
  if (!team) {
    if (audiences.length > 0 || operators.length > 0 || viewers.length > 0) {
      problems.push(
        `${CONSOLE_ACCESS_TEAM_DOMAIN.name} is required with the other CONSOLE_ACCESS_* settings`,
      )
    }
    return null
  }
  const issuer = teamIssuer(team)
  if (!issuer) {
    problems.push(
      `${CONSOLE_ACCESS_TEAM_DOMAIN.name} must be https://<team>.cloudflareaccess.com (or a loopback URL for a local key set)`,
    )
  }
  if (audiences.length === 0) {
    problems.push(`${CONSOLE_ACCESS_AUD.name} is required with ${CONSOLE_ACCESS_TEAM_DOMAIN.name}`)
  }
  if (operators.length === 0 && viewers.length === 0) {
    problems.push(
      `with ${CONSOLE_ACCESS_TEAM_DOMAIN.name}, ${CONSOLE_ACCESS_OPERATORS.name} or ${CONSOLE_ACCESS_VIEWERS.name} must name someone`,
    )
  }
  if (!issuer || audiences.length === 0) return null
  return { issuer, certsUrl: `${issuer}/cdn-cgi/access/certs`, audiences, operators, viewers }
}
