/**
 * What a deployment of the Worker needs, checked before `wrangler deploy`: one finding per problem,
 * each with its fix. The checks read the same tables and parser the Worker reads
 * (worker/settings.ts, worker/config.ts `parseSettings`), so a channel's new variable is checked
 * without a list here. Values never appear in a finding: a secret's name, never the secret.
 * The spool's queues and bucket are deploy-spool.ts's, the settings that trust too much
 * deploy-trust.ts's. `npm run doctor` (ops/doctor.ts) prints them; deploy-reachability.ts adds
 * the network's.
 * @module
 */

import { ORIGIN_SHARED_SECRET } from '../contract/forward-signature'
import type { WranglerConfig } from '../local/wrangler-config'
import { secretList } from '../shared/crypto'
import { OPERATOR_TOKEN, operatorTokenProblem } from '../shared/operator-token'
import { WEBHOOK_CHANNELS } from '../worker/channels'
import { channelConfig, parseSettings } from '../worker/config'
import type { Env } from '../worker/env'
import { ORIGIN_URL, WORKER_SETTINGS } from '../worker/settings'
import { checkConnections } from './deploy-connections'
import { error, type Finding, ok, putSecret, varsSection, warn } from './deploy-finding'
import { checkSpool } from './deploy-spool'
import { checkTrust } from './deploy-trust'

export type { Finding } from './deploy-finding'

export interface DeploymentInput {
  /** The `[env.NAME]` section checked; undefined: the top level. */
  envName: string | undefined
  config: WranglerConfig
  /** The Worker's secrets as they will be put (`wrangler secret bulk`'s file), by name. */
  secrets: Record<string, string>
}

/** The URL in wrangler.toml's environments until someone sets theirs. */
export const PLACEHOLDER_ORIGIN_HOST = 'origin.example.com'
/** ORIGIN_SHARED_SECRET entries shorter than this are guessable offline from one signature. */
export const MIN_SHARED_SECRET_LENGTH = 32
/** Telegram keeps an unanswered update 24 h: no channel's TTL may be shorter. */
const MIN_DEDUP_TTL_SECONDS = 86_400

export const SECRET_NAMES: readonly string[] = WORKER_SETTINGS.filter((row) => row.secret).map(
  (row) => row.name,
)
export const WORKER_VARIABLE_NAMES: readonly string[] = WORKER_SETTINGS.map((row) => row.name)
const SECRETS = new Set(SECRET_NAMES)
const KNOWN = new Set(WORKER_VARIABLE_NAMES)

/** Every finding for one environment, configuration first, then channels, the spool, TTLs. */
export function checkDeployment(input: DeploymentInput): Finding[] {
  // An empty value in the bulk file is a secret not given (the template's blanks).
  const secrets = Object.fromEntries(Object.entries(input.secrets).filter(([, v]) => v.trim()))
  const env = { ...input.config.vars, ...secrets } as unknown as Env
  return [
    ...checkVars(input),
    ...checkOriginUrl(input.config.vars[ORIGIN_URL.name], input.envName),
    ...checkSharedSecret(secrets[ORIGIN_SHARED_SECRET.name], input.envName),
    ...checkOperatorToken(secrets[OPERATOR_TOKEN.name], input.envName),
    ...checkTrust({ ...input.config.vars, ...secrets }, input.envName),
    ...checkChannels(env, input.envName),
    ...checkWeChatModes(env),
    ...checkSpool(input.config, parseSettings(env).spool, input.envName),
    ...checkConnections(input.config, secrets, input.envName),
    ...checkDedupTtls(env),
  ]
}

function checkVars({ config, envName, secrets }: DeploymentInput): Finding[] {
  const findings: Finding[] = []
  for (const name of Object.keys(secrets)) {
    if (!KNOWN.has(name)) {
      findings.push(
        warn(
          `${name} in the secrets is read by nothing`,
          'remove it, or correct its name (npm run doctor -- --print-secrets-template lists them)',
        ),
      )
    }
  }
  for (const name of Object.keys(config.vars)) {
    if (SECRETS.has(name)) {
      findings.push(
        error(
          `${name} is a secret but sits in ${varsSection(envName)}`,
          `remove it from wrangler.toml; ${putSecret(name, envName)}`,
        ),
      )
    } else if (!KNOWN.has(name)) {
      findings.push(
        warn(
          `${name} in ${varsSection(envName)} is read by nothing`,
          'remove it, or correct its name (worker/settings.ts lists every variable)',
        ),
      )
    }
  }
  return findings
}

export function checkOriginUrl(value: string | undefined, envName: string | undefined): Finding[] {
  const fix = `set ORIGIN_URL in ${varsSection(envName)} to your origin's https:// URL`
  if (!value) return [error('ORIGIN_URL is not set: every channel would answer 503', fix)]
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return [error('ORIGIN_URL is not a URL', fix)]
  }
  if (url.hostname === PLACEHOLDER_ORIGIN_HOST) {
    return [error(`ORIGIN_URL is still the placeholder ${value}`, fix)]
  }
  if (isLoopback(url.hostname)) {
    return [error(`ORIGIN_URL ${value} is a loopback address: every event would spool`, fix)]
  }
  if (url.protocol !== 'https:') {
    return [
      error(
        `ORIGIN_URL ${value} is not https: events (message bodies) would cross the internet in clear`,
        fix,
      ),
    ]
  }
  return [ok(`ORIGIN_URL is https (${url.host})`)]
}

function isLoopback(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname.startsWith('127.') ||
    hostname === '[::1]' ||
    hostname === '0.0.0.0'
  )
}

export function checkSharedSecret(
  value: string | undefined,
  envName: string | undefined,
): Finding[] {
  const name = ORIGIN_SHARED_SECRET.name
  const entries = secretList(value)
  if (entries.length === 0) {
    return [
      error(
        `${name} is not set: no event can reach the origin`,
        `${putSecret(name, envName)}, the same value as the origin's (openssl rand -hex 32)`,
      ),
    ]
  }
  const short = entries.filter((entry) => entry.length < MIN_SHARED_SECRET_LENGTH).length
  if (short > 0) {
    return [
      error(
        `${name}: ${short} of its ${entries.length} entries are shorter than ${MIN_SHARED_SECRET_LENGTH} characters`,
        `generate one with openssl rand -hex 32, put it on both sides (${putSecret(name, envName)})`,
      ),
    ]
  }
  return [
    ok(`${name} is set (${entries.length} entries, each ${MIN_SHARED_SECRET_LENGTH}+ characters)`),
  ]
}

/** A short operator token serves no Worker route and stops the origin (shared/operator-token). */
function checkOperatorToken(value: string | undefined, envName: string | undefined): Finding[] {
  const problem = operatorTokenProblem(value)
  if (!problem) return []
  return [
    error(
      `${problem}: the Worker serves /healthz/deep to nobody and the origin will not start`,
      `${putSecret(OPERATOR_TOKEN.name, envName)}, the same value on the origin`,
    ),
  ]
}

/**
 * Each channel the deployment uses (one of its variables set) must have all it needs; a channel
 * with none set is off, which is fine, but one of them at least must be on.
 */
function checkChannels(env: Env, envName: string | undefined): Finding[] {
  const settings = parseSettings(env)
  const findings: Finding[] = settings.warnings.map((warning) =>
    warn(warning, 'set or correct the variable it names (the Worker logs the same at start)'),
  )
  if (settings.channelsInUse.size === 0) {
    findings.push(
      error(
        'no webhook channel is configured',
        `put the secrets of the channels you use (npm run doctor -- --print-secrets-template lists them); ${putSecret('SLACK_SIGNING_SECRET', envName)}`,
      ),
    )
  }
  for (const channel of WEBHOOK_CHANNELS) {
    if (!settings.channelsInUse.has(channel.name)) continue
    const config = channelConfig(settings, channel)
    if (config.ok) {
      findings.push(ok(`channel ${channel.name} has what it needs`))
      continue
    }
    // The origin's two are reported once, above.
    const own = config.missing.filter(
      (name) => name !== ORIGIN_URL.name && name !== ORIGIN_SHARED_SECRET.name,
    )
    for (const missing of own) {
      // "A (or B)": the first is the one to set.
      const name = missing.split(' ')[0] ?? missing
      const fix = SECRETS.has(name)
        ? putSecret(name, envName)
        : `set ${name} in ${varsSection(envName)}`
      findings.push(error(`channel ${channel.name} is configured but misses ${missing}`, fix))
    }
  }
  return findings
}

/**
 * A WeChat account in plain mode: its signature covers no body (docs/guarantees.md, the limits),
 * and the gateway then needs Redis to take its pushes at all. Safe mode signs and seals the push.
 */
function checkWeChatModes(env: Env): Finding[] {
  const wechat = parseSettings(env).wechat
  if (!wechat.ok || wechat.value.tokens.kind !== 'per-tenant') return []
  const { aesKeys } = wechat.value
  return [...wechat.value.tokens.byTenant.keys()]
    .filter((account) => !aesKeys.has(account))
    .map((account) =>
      warn(
        `WeChat account ${account} is in plain mode: its pushes are signed without their body (whoever sees one in transit can replace it), and are refused while Redis is out of reach`,
        `switch it to safe mode (安全模式) in its console, then set its EncodingAESKey in WECHAT_AES_KEYS_BY_ACCOUNT and its AppID in WECHAT_APP_IDS_BY_ACCOUNT`,
      ),
    )
}

/** No channel's dedup TTL below its vendor's redelivery horizon (a day at least). */
function checkDedupTtls(env: Env): Finding[] {
  const settings = parseSettings(env)
  const findings: Finding[] = []
  for (const channel of WEBHOOK_CHANNELS) {
    const ttl = settings.dedupTtlByChannel[channel.name] ?? 0
    const horizon = Math.max(channel.dedupTtl.horizonSeconds ?? 0, MIN_DEDUP_TTL_SECONDS)
    if (ttl < horizon) {
      findings.push(
        error(
          `channel ${channel.name}: dedup TTL ${ttl} s is below its vendor's redelivery horizon (${horizon} s): a late redelivery would be a second message`,
          `set ${channel.dedupTtl.name} (or DEDUP_TTL_SECONDS) to ${horizon} or more`,
        ),
      )
    }
  }
  if (findings.length === 0)
    findings.push(ok("every channel's dedup TTL covers its vendor's horizon"))
  return findings
}
