/**
 * Settings as rows of a table, and the readers that read a row from strings (Worker bindings, a
 * process environment). Each wing lists its settings once (worker/settings.ts, origin/settings.ts;
 * claims/settings.ts for the claim settings both read): the parsers read through the rows, `npm
 * run dev` routes variables by them, and a test checks docs/configuration.md's tables and
 * `.dev.vars.example` against them.
 *
 * An invalid value is reported into `report` (the Worker logs it and uses the default; the origin
 * refuses to start with it) naming the variable and the rule, never the value (it may be a secret).
 * @module
 */

interface Row<N extends string> {
  readonly name: N
  /**
   * A secret: the Worker's are put with `wrangler secret put` (locally `.dev.vars`), never in
   * wrangler.toml's [vars]; no value is ever logged, a secret's least of all.
   */
  readonly secret: boolean
  /** One line for the reader of the code; its row in docs/configuration.md says the rest. */
  readonly doc: string
}

/** An integer in [min, max]. */
export interface IntSetting<N extends string = string> extends Row<N> {
  readonly kind: 'int'
  readonly default: number
  readonly min: number
  readonly max: number
}

/** An http(s) URL (read without its trailing slash). */
export interface UrlSetting<N extends string = string> extends Row<N> {
  readonly kind: 'url'
  readonly default?: string
}

/**
 * The rest are strings the reader of the setting interprets: `secret-list` a comma-separated
 * rotation list (shared/crypto.ts's secretList), `tenant-secrets` a per-tenant list
 * (worker/channels/tenant-secrets.ts), `list` comma-separated names, `string` the trimmed value.
 */
export interface TextSetting<N extends string = string> extends Row<N> {
  readonly kind: 'string' | 'list' | 'secret-list' | 'tenant-secrets'
  readonly default?: string
}

export type SettingRow<N extends string = string> = IntSetting<N> | UrlSetting<N> | TextSetting<N>

/** Declares a row, keeping its name (and the rest) as literal types for the env types. */
export const setting = <const R extends SettingRow>(row: R): R => row

/** A table without repeated names (the same row may reach a wing by two paths). */
export function settingTable<const G extends readonly (readonly SettingRow[])[]>(
  ...groups: G
): G[number][number][] {
  const byName = new Map<string, G[number][number]>()
  for (const row of groups.flat()) {
    const known = byName.get(row.name)
    if (known && known !== row) throw new Error(`setting ${row.name} is declared twice`)
    byName.set(row.name, row)
  }
  return [...byName.values()]
}

/**
 * Anything that maps variable names to values (a Worker `env` interface, `process.env`); only
 * string values are read.
 */
export type StringEnv = object

/** The value as it is (untrimmed), or undefined when unset or not a string. */
export function rawValue(env: StringEnv, name: string): string | undefined {
  const value = (env as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

/** The trimmed value, or null when unset, empty or not a string (a binding of another kind). */
export function present(env: StringEnv, name: string): string | null {
  const trimmed = rawValue(env, name)?.trim()
  return trimmed ? trimmed : null
}

/**
 * The row's integer, else `fallback` (the row's default unless the caller computes one), with a
 * report when the value was set but is not an integer in range.
 */
export function readInt(
  env: StringEnv,
  row: IntSetting,
  report: string[],
  fallback: number = row.default,
): number {
  const raw = present(env, row.name)
  if (raw === null) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < row.min || value > row.max) {
    report.push(
      `${row.name} must be an integer from ${row.min} to ${row.max} (default ${fallback})`,
    )
    return fallback
  }
  return value
}

/** The http(s) URL of `raw`, or null when it is not one. */
export function httpUrl(raw: string): URL | null {
  try {
    const url = new URL(raw)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null
  } catch {
    return null
  }
}

/**
 * The row's URL without a trailing slash; unset: its default, or null. An invalid value is
 * reported and read as unset.
 */
export function readUrl(env: StringEnv, row: UrlSetting, report: string[]): string | null {
  const raw = present(env, row.name)
  const fallback = row.default ?? null
  if (raw === null) return fallback
  if (!httpUrl(raw)) {
    report.push(
      `${row.name} must be an http(s) URL${fallback ? ` (default ${fallback})` : '; treated as unset'}`,
    )
    return fallback
  }
  return raw.replace(/\/+$/, '')
}

/** The row's trimmed value, else its default, else null. */
export function readText(env: StringEnv, row: TextSetting): string | null {
  return present(env, row.name) ?? row.default ?? null
}
