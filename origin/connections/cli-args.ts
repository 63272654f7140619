/**
 * The arguments of `npm run connections -- <command>`, read into a {@link Command}. A secret is
 * never an argument (arguments land in shell history and `ps`): it comes from a variable
 * (`--secret-env field=VAR`) or a JSON body on stdin or in a file (`--json FILE|-`).
 * @module
 */
import { parseArgs as parseNodeArgs } from 'node:util'

export const USAGE = `usage: npm run connections -- <command>
  list [--channel C] [--status active|disabled] [--account A] [--after ID] [--limit N]
  show <id>
  create --channel C --account A [--ids a,b] [--setting k=v]... [--secret-env field=VAR]...
         [--generate field]...              the registry makes that secret; printed once
  create --json FILE|-                      the admin API's body (POST /v1/admin/connections)
  update <id> [--ids a,b] [--setting k=v]... | --json FILE|-
  rotate <id> --secret-env field=VAR | --generate field [--overlap-seconds N] | --json FILE|-
  disable <id> | enable <id> | delete <id>
  import [--env-file FILE] [--dry-run]      today's variables (the environment, or FILE) as connections
  resync                                    queue every connection for the edge again
  rewrap                                    re-wrap every secret under the first ORIGIN_KEKS key
  publish                                   one publisher pass now (needs EDGE_KEKS and CLOUDFLARE_*)
  add --output json to print views as JSON. Secrets are never printed (views show fingerprints),
  but for one --generate made, once.`

import { UsageError } from '../cli-kit'

export { UsageError }

export interface Flags {
  channel?: string
  status?: string
  account?: string
  after?: string
  limit?: string
  ids?: string
  setting?: string[]
  'secret-env'?: string[]
  generate?: string[]
  json?: string
  'overlap-seconds'?: string
  'env-file'?: string
  'dry-run'?: boolean
  output?: string
}

export type Command =
  | { name: 'help' }
  | { name: 'list' | 'create' | 'import' | 'resync' | 'rewrap' | 'publish'; flags: Flags }
  | {
      name: 'show' | 'update' | 'rotate' | 'disable' | 'enable' | 'delete'
      id: string
      flags: Flags
    }

const WITH_ID = new Set(['show', 'update', 'rotate', 'disable', 'enable', 'delete'])
const WITHOUT_ID = new Set(['list', 'create', 'import', 'resync', 'rewrap', 'publish'])

export function parseArgs(args: readonly string[]): Command {
  const [name, ...rest] = args
  if (!name || name === 'help' || name === '--help' || name === '-h') return { name: 'help' }
  let parsed: ReturnType<typeof parseNodeArgs>
  try {
    parsed = parseNodeArgs({
      args: [...rest],
      allowPositionals: true,
      strict: true,
      options: {
        channel: { type: 'string' },
        status: { type: 'string' },
        account: { type: 'string' },
        after: { type: 'string' },
        limit: { type: 'string' },
        ids: { type: 'string' },
        setting: { type: 'string', multiple: true },
        'secret-env': { type: 'string', multiple: true },
        generate: { type: 'string', multiple: true },
        json: { type: 'string' },
        'overlap-seconds': { type: 'string' },
        'env-file': { type: 'string' },
        'dry-run': { type: 'boolean' },
        output: { type: 'string' },
      },
    })
  } catch (err) {
    // Only the option's name is repeated: an argument could be a secret pasted in the wrong place.
    const option = err instanceof Error ? /'(--?[A-Za-z-]{1,40})'/.exec(err.message)?.[1] : null
    throw new UsageError(option ? `bad or unknown option ${option}` : 'bad arguments')
  }
  const flags = parsed.values as Flags
  if (flags.output !== undefined && flags.output !== 'json') throw new UsageError('--output json')
  if (WITH_ID.has(name)) {
    const [id, ...extra] = parsed.positionals
    if (!id || extra.length > 0) throw new UsageError(`${name} takes one connection id`)
    return { name: name as 'show', id, flags }
  }
  if (WITHOUT_ID.has(name)) {
    if (parsed.positionals.length > 0) throw new UsageError(`${name} takes no id`)
    return { name: name as 'list', flags }
  }
  throw new UsageError(`unknown command ${JSON.stringify(name.slice(0, 20))}`)
}

/** `k=v` pairs of a repeated flag as an object; `what` names the flag in a problem. */
export function pairs(values: readonly string[] | undefined, what: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const value of values ?? []) {
    const equals = value.indexOf('=')
    if (equals < 1) throw new UsageError(`${what} takes name=value`)
    out[value.slice(0, equals)] = value.slice(equals + 1)
  }
  return out
}
