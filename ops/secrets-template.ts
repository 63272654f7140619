/**
 * The file `wrangler secret bulk` takes, for `npm run doctor -- --write-secrets-template FILE`
 * (or `--print-secrets-template`): every secret the Worker reads, empty, and beside it a guide to
 * which reader needs which, and which of their settings are plain variables (wrangler.toml's vars
 * section, not the file: Teams' app ids, Telegram's bot id).
 * @module
 */
import { writeFileSync } from 'node:fs'
import type { SettingRow } from '../shared/settings'
import { WEBHOOK_CHANNELS } from '../worker/channels'
import { WORKER_SETTINGS } from '../worker/settings'
import { SECRET_NAMES } from './deploy-checks'
import { varsSection } from './deploy-finding'

export interface Reader {
  reader: string
  secrets: string[]
  /** Its plain variables without a default: they go in the vars section, never the file. */
  vars: string[]
}

/** Who reads which secrets and variables: each channel its own (its variables), the rest the gateway. */
export function secretsByReader(): Reader[] {
  const names = (rows: readonly SettingRow[], secret: boolean) =>
    rows
      .filter((row) => row.secret === secret && (secret || row.default === undefined))
      .map((row) => row.name)
  const channels = WEBHOOK_CHANNELS.map((channel) => ({
    reader: `channel ${channel.name}`,
    secrets: names(channel.variables, true),
    vars: names(channel.variables, false),
  }))
  const ofChannels = new Set<string>(channels.flatMap((c) => [...c.secrets, ...c.vars]))
  const gateway = WORKER_SETTINGS.filter((row) => !ofChannels.has(row.name))
  return [
    { reader: 'the gateway', secrets: names(gateway, true), vars: names(gateway, false) },
    ...channels,
  ]
}

/** The file `wrangler secret bulk` takes: every secret the Worker reads, empty. */
export function secretsTemplate(): Record<string, string> {
  return Object.fromEntries(SECRET_NAMES.map((name) => [name, '']))
}

export function templateText(): string {
  return `${JSON.stringify(secretsTemplate(), null, 2)}\n`
}

/** One line per reader, then what to do with the file. */
export function templateGuide(envName: string | undefined, file = 'FILE'): string {
  const lines = secretsByReader().map(({ reader, secrets, vars }) => {
    const own = secrets.length > 0 ? secrets.join(', ') : 'no secrets'
    const plain =
      vars.length > 0 ? `; variables, in ${varsSection(envName)}: ${vars.join(', ')}` : ''
    return `${reader}: ${own}${plain}`
  })
  const env = envName ? ` --env ${envName}` : ' --env ENV'
  lines.push(`fill in those you use, delete the rest, then: npx wrangler secret bulk ${file}${env}`)
  return `${lines.join('\n')}\n`
}

/** Writes the template to `path` for its owner only; an existing file is refused, never replaced. */
export function writeTemplate(path: string): void {
  writeFileSync(path, templateText(), { mode: 0o600, flag: 'wx' })
}
