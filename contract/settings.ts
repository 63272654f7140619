/**
 * Readers for settings that arrive as strings (Worker bindings, a process environment). An
 * invalid value is replaced by its default and a warning names the variable and the rule, never
 * the value (it may be a secret). Shared by the Worker's settings and the claim settings that the
 * origin's Gmail poller reads the same way.
 * @module
 */

/**
 * Anything that maps variable names to values (a Worker `env` interface, `process.env`); only
 * string values are read.
 */
export type StringEnv = object

/** The trimmed value, or null when unset, empty or not a string (a binding of another kind). */
export function present(env: StringEnv, name: string): string | null {
  const value = (env as Record<string, unknown>)[name]
  if (typeof value !== 'string') return null
  const trimmed = value.trim()
  return trimmed ? trimmed : null
}

/** An integer in [min, max], else `fallback` (with a warning when the value was set but wrong). */
export function readInt(
  env: StringEnv,
  name: string,
  fallback: number,
  bounds: { min: number; max: number },
  warnings: string[],
): number {
  const raw = present(env, name)
  if (raw === null) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < bounds.min || value > bounds.max) {
    warnings.push(`${name} must be an integer in [${bounds.min}, ${bounds.max}]; using ${fallback}`)
    return fallback
  }
  return value
}

/** An http(s) URL without a trailing slash, or null (unset or invalid, with a warning). */
export function readUrl(env: StringEnv, name: string, warnings: string[]): string | null {
  const raw = present(env, name)
  if (raw === null) return null
  try {
    const url = new URL(raw)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)')
    return raw.replace(/\/+$/, '')
  } catch {
    warnings.push(`${name} is not an http(s) URL; treated as unset`)
    return null
  }
}
