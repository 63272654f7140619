/**
 * The settings tables (worker/settings.ts, origin/settings.ts, local/settings.ts) against what
 * documents them: docs/configuration.md's tables (every variable has a row, no row names a
 * variable nobody reads, the defaults agree), `.dev.vars.example` (every Worker secret, nothing
 * unknown) and wrangler.toml's [vars] (vars only, defaults agree). Plus `npm run dev`'s routing.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CLAIM_SETTINGS } from '../../claims/settings'
import { LOCAL_SETTINGS, routeDevSettings } from '../../local/settings'
import { readWranglerConfig } from '../../local/wrangler-config'
import { ORIGIN_SETTINGS } from '../../origin/settings'
import type { SettingRow } from '../../shared/settings'
import { WORKER_SETTINGS } from '../../worker/settings'

const ROOT = join(import.meta.dirname, '..', '..')
const CONFIGURATION = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8')

interface DocRow {
  names: string[]
  /** The leading `a`, `b` list of the Default cell; null when it states none that way. */
  defaults: string[] | null
  cell: string
}

/** The rows of the first table under `## {heading}` in docs/configuration.md. */
function readmeTable(heading: string): DocRow[] {
  const start = CONFIGURATION.indexOf(`\n## ${heading}`)
  expect(start, `docs/configuration.md has a "## ${heading}" table`).toBeGreaterThan(-1)
  const lines = CONFIGURATION.slice(start + 1)
    .split('\n')
    .slice(1)
  const table = lines.slice(
    0,
    lines.findIndex((line) => !line.startsWith('|')),
  )
  return table
    .slice(2)
    .map((line) => line.replace(/\\\|/g, '¦').split('|').slice(1, -1))
    .filter(([first]) => !first?.trim().startsWith('binding'))
    .map(([first = '', cell = '']) => {
      const names = [...first.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1] as string)
      const leading = /^\s*(`[^`]*`(?:, `[^`]*`)*)/.exec(cell)?.[1]
      const defaults = leading
        ? [...leading.matchAll(/`([^`]*)`/g)].map((m) => m[1] as string)
        : null
      return { names, defaults, cell: cell.trim() }
    })
}

const hasDefault = (row: SettingRow) => row.default !== undefined && row.default !== ''

function checkAgainst(heading: string, rows: readonly SettingRow[]) {
  const doc = readmeTable(heading)
  const byName = new Map(rows.map((row) => [row.name, row]))
  const documented = doc.flatMap((row) => row.names)
  expect(
    documented.filter((name) => !byName.has(name)),
    'docs/configuration.md rows nobody reads',
  ).toEqual([])
  expect(
    rows.map((row) => row.name).filter((name) => !documented.includes(name)),
    'variables without a docs/configuration.md row',
  ).toEqual([])
  expect(documented.length, 'a variable documented twice').toBe(new Set(documented).size)
  for (const { names, defaults, cell } of doc) {
    const settings = names.map((name) => byName.get(name) as SettingRow)
    if (defaults === null) {
      // "as the worker": the claim settings, whose one row both wings read.
      const claims = CLAIM_SETTINGS as readonly SettingRow[]
      if (cell.startsWith('as the worker')) {
        expect(
          settings.every((row) => claims.includes(row)),
          names.join(),
        ).toBe(true)
        continue
      }
      const stated = settings.filter(hasDefault).map((row) => `${row.name}=${row.default}`)
      expect(stated, `docs/configuration.md states no default for ${names.join(', ')}`).toEqual([])
      continue
    }
    expect(defaults.length, `one default per variable in ${names.join(', ')}`).toBe(names.length)
    expect(defaults, names.join(', ')).toEqual(settings.map((row) => String(row.default ?? '')))
  }
}

describe('settings tables against docs/configuration.md', () => {
  it('Worker', () => checkAgainst('Worker', WORKER_SETTINGS))
  it('Origin', () => checkAgainst('Origin', ORIGIN_SETTINGS))
  it('Local stack', () => checkAgainst('Local stack', LOCAL_SETTINGS))

  it('notices a stale row and a missing one (the check can fail)', () => {
    const [first, ...rest] = WORKER_SETTINGS
    expect(() => checkAgainst('Worker', rest)).toThrow()
    expect(() =>
      checkAgainst('Worker', [...WORKER_SETTINGS, { ...(first as SettingRow), name: 'NEW_ONE' }]),
    ).toThrow()
  })
})

describe('settings tables against .dev.vars.example and wrangler.toml', () => {
  const example = readFileSync(join(ROOT, '.dev.vars.example'), 'utf8')
  // Set or commented out (`# NAME=value`): both document a variable.
  const exampleNames = [...example.matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1])

  it('.dev.vars.example names every Worker secret, and nothing no table reads', () => {
    const known = new Set(
      [...WORKER_SETTINGS, ...ORIGIN_SETTINGS, ...LOCAL_SETTINGS].map((row) => row.name),
    )
    expect(exampleNames.filter((name) => !known.has(name as string))).toEqual([])
    const secrets = WORKER_SETTINGS.filter((row) => row.secret).map((row) => row.name)
    expect(secrets.filter((name) => !exampleNames.includes(name))).toEqual([])
  })

  it("wrangler.toml's [vars] are the Worker's plain vars, with their defaults", async () => {
    const { vars } = await readWranglerConfig()
    const byName = new Map(WORKER_SETTINGS.map((row) => [row.name, row]))
    for (const [name, value] of Object.entries(vars)) {
      const row = byName.get(name)
      expect(row, `${name} is in the Worker's table`).toBeDefined()
      expect(row?.secret, `${name} is a secret: not for [vars]`).toBe(false)
      if (value !== '' && row && hasDefault(row)) expect(value, name).toBe(String(row.default))
    }
  }, 60_000)
})

describe("npm run dev's routing", () => {
  it('gives each side the variables of its table, and the stack its own', () => {
    const routed = routeDevSettings({
      SLACK_SIGNING_SECRET: 's',
      TELEGRAM_BOT_ID: '1',
      GMAIL_CLIENT_SECRET: 'g',
      DEDUP_TTL_SECONDS: '600',
      LOG_LEVEL: 'warn',
      DATABASE_URL: 'postgres://x',
      WORKER_PORT: '1',
      SOMETHING_ELSE: 'x',
    })
    expect(routed.worker).toEqual({
      SLACK_SIGNING_SECRET: 's',
      TELEGRAM_BOT_ID: '1',
      DEDUP_TTL_SECONDS: '600',
    })
    // The stack sets DATABASE_URL for the origin itself (its database layer).
    expect(routed.origin).toEqual({
      GMAIL_CLIENT_SECRET: 'g',
      DEDUP_TTL_SECONDS: '600',
      LOG_LEVEL: 'warn',
    })
    expect(routed.unknown).toEqual(['SOMETHING_ELSE'])
  })
})
