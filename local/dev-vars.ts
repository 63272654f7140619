/**
 * Settings for `npm run dev`: `.dev.vars` (dotenv format, the file `wrangler dev` also reads), or,
 * when it is missing, the committed `.dev.vars.example` with a warning that development values
 * are in use. Variables set in the environment win over both.
 *
 * Values are secrets: nothing here prints one; warnings name files and variables only.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseEnv } from 'node:util'

export interface DevVars {
  /** Merged values: file, then environment on top (non-empty environment values win). */
  values: Record<string, string>
  /** The file the values came from. */
  source: '.dev.vars' | '.dev.vars.example' | 'none'
  /** Names whose value came from the environment rather than the file. */
  fromEnvironment: string[]
}

export interface LoadDevVarsOptions {
  /** Directory holding `.dev.vars` / `.dev.vars.example`. */
  root: string
  /** @default process.env */
  env?: NodeJS.ProcessEnv
  /**
   * Names to take from the environment even when no file mentions them (wrangler.toml's [vars],
   * REDIS_URL, DATABASE_URL, ...).
   */
  alsoFromEnvironment?: readonly string[]
  /** Where the fallback warning goes. @default console.warn */
  warn?: (message: string) => void
}

export function loadDevVars(options: LoadDevVarsOptions): DevVars {
  const env = options.env ?? process.env
  const warn = options.warn ?? ((message: string) => console.warn(message))
  let source: DevVars['source'] = 'none'
  let fileValues: Record<string, string> = {}
  for (const name of ['.dev.vars', '.dev.vars.example'] as const) {
    const path = join(options.root, name)
    if (!existsSync(path)) continue
    fileValues = parseEnv(readFileSync(path, 'utf8')) as Record<string, string>
    source = name
    break
  }
  if (source === '.dev.vars.example') {
    warn(
      'warning: no .dev.vars found, using the development values from .dev.vars.example. ' +
        'Copy it to .dev.vars to change them; never use these values anywhere real.',
    )
  } else if (source === 'none') {
    warn('warning: neither .dev.vars nor .dev.vars.example found; using the environment only.')
  }
  const values = { ...fileValues }
  const fromEnvironment: string[] = []
  const names = new Set([...Object.keys(fileValues), ...(options.alsoFromEnvironment ?? [])])
  for (const name of names) {
    const value = env[name]
    // An empty variable in the environment means "not set" (a blank `export X=` in a shell rc).
    if (value === undefined || value === '') continue
    values[name] = value
    fromEnvironment.push(name)
  }
  return { values, source, fromEnvironment }
}
