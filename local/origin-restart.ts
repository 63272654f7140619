/**
 * The command `npm run dev` prints when its origin dies: the origin started again on its port with
 * every variable it was started with (the database's, the console's `OPERATOR_TOKEN`, the Upstash
 * settings its Gmail claims use, ...), so the console, `/metrics` and the claims are back too.
 *
 * No secret is printed. A secret's value is named where it came from, for the shell to read
 * (`"$NAME"` from the environment, `"$(sed … .dev.vars)"` from the file); one the stack made up is
 * masked (a URL keeps all but its password).
 * @module
 */
import { ORIGIN_SETTINGS } from '../origin/settings'
import type { DevVars } from './dev-vars'
import { redact } from './redact'

const SECRETS = new Set(ORIGIN_SETTINGS.filter((row) => row.secret).map((row) => row.name))

/** A value the shell reads as it is: anything else goes in single quotes. */
const PLAIN = /^[A-Za-z0-9_@%+=:,./-]*$/

function quoted(value: string): string {
  return PLAIN.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`
}

/** How the command spells one secret: read from its source, or masked. */
function secretRef(name: string, value: string, devVars: DevVars): string {
  if (devVars.values[name] === value) {
    if (devVars.fromEnvironment.includes(name)) return `"$${name}"`
    if (devVars.source !== 'none') return `"$(sed -n 's/^${name}=//p' ${devVars.source})"`
  }
  const password = urlPassword(value)
  if (password !== null) return quoted(password ? redact(value) : value)
  return "'***'"
}

/** A URL's password ('' for none), or null for a value that is not a URL. */
function urlPassword(value: string): string | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return null
  try {
    return new URL(value).password
  } catch {
    return null
  }
}

/** `ORIGIN_PORT=… NAME=… … npm run origin`, every variable of `originEnv`, no secret in it. */
export function originRestartCommand(
  originEnv: Record<string, string>,
  port: number,
  devVars: DevVars,
): string {
  const assignments = Object.entries(originEnv)
    .filter(([name]) => name !== 'ORIGIN_PORT')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => {
      const secret = SECRETS.has(name) || /SECRET|TOKEN|PASSWORD/.test(name)
      return `${name}=${secret ? secretRef(name, value, devVars) : quoted(value)}`
    })
  return [`ORIGIN_PORT=${port}`, ...assignments, 'npm run origin'].join(' ')
}
