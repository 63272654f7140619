/**
 * What `npm run connections` sends and prints: a change's body from the flags (a secret from a
 * variable, never an argument) or from `--json`, and a view as one line (fingerprints only).
 * @module
 */
import { readFileSync } from 'node:fs'
import type { OriginEnv } from '../config'
import { type Flags, pairs, UsageError } from './cli-args'
import type { ConnectionView } from './views'

export interface BodyIo {
  /** The JSON of `--json -`. @default stdin */
  stdin?: () => string
}

/** The body of a change: `--json FILE|-`, else built from the flags by `build`. */
export function bodyOf(
  flags: Flags,
  env: OriginEnv,
  io: BodyIo,
  build: (flags: Flags, env: OriginEnv) => unknown,
) {
  if (flags.json === undefined) return build(flags, env)
  const text =
    flags.json === '-'
      ? (io.stdin ?? (() => readFileSync(0, 'utf8')))()
      : readFileSync(flags.json, 'utf8')
  try {
    return JSON.parse(text)
  } catch {
    throw new UsageError('--json: not JSON')
  }
}

/** `--secret-env field=VAR`: each secret from a variable, so it is in no argument. */
function secretsOf(flags: Flags, env: OriginEnv): Record<string, string> {
  const secrets: Record<string, string> = {}
  for (const [field, variable] of Object.entries(pairs(flags['secret-env'], '--secret-env'))) {
    const value = env[variable]
    if (!value) throw new UsageError(`--secret-env ${field}: ${variable} is not set`)
    secrets[field] = value
  }
  return secrets
}

const listOf = (text: string | undefined) =>
  text
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean)

export function createBody(flags: Flags, env: OriginEnv) {
  const ids = listOf(flags.ids)
  return {
    channel: flags.channel,
    account: flags.account,
    ...(ids ? { ids } : {}),
    ...(flags.setting ? { settings: pairs(flags.setting, '--setting') } : {}),
    secrets: secretsOf(flags, env),
    ...(flags.generate ? { generate: flags.generate } : {}),
  }
}

export function updateBody(flags: Flags) {
  const ids = listOf(flags.ids)
  return {
    ...(ids ? { ids } : {}),
    ...(flags.setting ? { settings: pairs(flags.setting, '--setting') } : {}),
  }
}

export function rotateBody(flags: Flags, env: OriginEnv) {
  const overlap = flags['overlap-seconds']
  return {
    secrets: secretsOf(flags, env),
    ...(flags.generate ? { generate: flags.generate } : {}),
    ...(overlap !== undefined ? { overlapSeconds: Number(overlap) } : {}),
  }
}

export function viewLine(c: ConnectionView): string {
  const secrets = c.secrets.map(
    (s) => `${s.field}:${s.fingerprint}${s.notAfter ? ` until ${s.notAfter}` : ''}`,
  )
  const edge = c.edge.pending ? 'pending' : `published v${c.edge.publishedVersion ?? '-'}`
  const seen = c.edge.seenVersion ? `, seen v${c.edge.seenVersion}` : ''
  return `${c.id} ${c.channel} ${c.account} ${c.status} v${c.version} ids:${c.ids.length} [${secrets.join(' ')}] edge: ${edge}${seen}`
}

/** A secret the registry made, the one time it is shown: the create's or rotate's answer. */
export function generatedLines(view: { generated?: Record<string, string> }): string {
  return Object.entries(view.generated ?? {})
    .map(([field, value]) => `\ngenerated ${field} (shown this once): ${value}`)
    .join('')
}
