/**
 * Bindings for `wrangler dev` in a file (`--env-file`) rather than on its command line, where
 * every user of the machine reads them with `ps`: a directory of its own (0700) and a file only we
 * can read (0600), removed when the Worker stops.
 *
 * wrangler reads the file with dotenv, then dotenv-expand: each value goes in quotes it does not
 * contain, and every `$` escaped (`\$`), so a secret comes out exactly as it went in.
 * @module
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const QUOTES = ["'", '"', '`'] as const

/** One `NAME=value` line; throws for a value dotenv cannot carry (a newline, all three quotes). */
export function dotenvLine(name: string, value: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`${name}: not a variable name`)
  const quote = QUOTES.find((q) => !value.includes(q))
  if (/[\r\n]/.test(value) || quote === undefined) {
    throw new Error(`${name}: its value cannot go in a dotenv file (a newline, or every quote)`)
  }
  return `${name}=${quote}${value.replaceAll('$', '\\$')}${quote}`
}

export interface PrivateEnvFile {
  path: string
  remove(): void
}

export function writePrivateEnvFile(vars: Record<string, string>): PrivateEnvFile {
  const dir = mkdtempSync(join(tmpdir(), 'inbound-dedup-worker-vars-'))
  const path = join(dir, 'worker.env')
  const text = Object.entries(vars)
    .map(([name, value]) => dotenvLine(name, value))
    .join('\n')
  writeFileSync(path, `${text}\n`, { mode: 0o600 })
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) }
}
