/**
 * `npm run doctor -- [--env NAME] [--secrets-file PATH] [--check-network] [--print-secrets-template]`:
 * what a deployment of one wrangler.toml environment needs, one line per finding with its fix
 * (local/deploy-checks.ts; with `--check-network`, local/deploy-reachability.ts).
 *
 * The Worker's secrets come from `--secrets-file` (the JSON object `wrangler secret bulk` takes,
 * or a dotenv file such as `.dev.vars`), else from this process's environment (only the names the Worker reads as secrets). The network
 * checks read the origin's DATABASE_URL (DATABASE_DRIVER, NEON_WS_PROXY) from the environment and
 * Upstash's URL and token from the secrets. `--print-secrets-template` prints the bulk file to
 * fill in (every secret the Worker reads, empty: leave out the channels you do not use).
 *
 * Exit codes: 0 no error (warnings allowed), 1 an error found, 2 usage.
 * @module
 */
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { parseArgs, parseEnv } from 'node:util'
import {
  checkDeployment,
  type Finding,
  SECRET_NAMES,
  secretsByReader,
  secretsTemplate,
  WORKER_VARIABLE_NAMES,
} from './deploy-checks'
import { checkPostgres, checkRedis } from './deploy-reachability'
import { readWranglerConfig, WRANGLER_TOML } from './wrangler-config'

const USAGE = `usage: npm run doctor -- [--env staging|production] [--config wrangler.toml]
  [--secrets-file secrets.json] [--check-network] [--print-secrets-template]`

class UsageError extends Error {
  readonly code = 'usage'
}

interface DoctorArgs {
  env: string | undefined
  config: string
  secretsFile: string | undefined
  checkNetwork: boolean
  printTemplate: boolean
}

function readArgs(argv: string[]): DoctorArgs {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        env: { type: 'string' },
        config: { type: 'string' },
        'secrets-file': { type: 'string' },
        'check-network': { type: 'boolean' },
        'print-secrets-template': { type: 'boolean' },
      },
      strict: true,
    })
    return {
      env: values.env,
      config: values.config ?? WRANGLER_TOML,
      secretsFile: values['secrets-file'],
      checkNetwork: values['check-network'] ?? false,
      printTemplate: values['print-secrets-template'] ?? false,
    }
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

/** The secrets file, or the Worker's secrets found in `env`; string values only. */
export function readSecrets(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
): Record<string, string> {
  if (!file) return pick(env, SECRET_NAMES)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new UsageError(`--secrets-file: cannot read it (${(err as NodeJS.ErrnoException).code})`)
  }
  // A dotenv file (.dev.vars) also holds the origin's and the stack's: the Worker's variables
  // only, plain ones included (`wrangler dev` puts them on top of [vars], as here).
  if (!text.trimStart().startsWith('{')) return pick(parseEnv(text), WORKER_VARIABLE_NAMES)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    // The message of a JSON error may quote the file's text: a secret. Nothing of it goes out.
    throw new UsageError('--secrets-file: not valid JSON')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError('--secrets-file: a JSON object of NAME: "value" is expected')
  }
  return Object.fromEntries(
    Object.entries(parsed).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string',
    ),
  )
}

function pick(values: NodeJS.ProcessEnv, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    names.flatMap((name) => (values[name] ? [[name, values[name] as string]] : [])),
  )
}

export function formatFinding(finding: Finding): string {
  const label = finding.level.toUpperCase().padEnd(5)
  return finding.fix
    ? `${label} ${finding.what}\n      fix: ${finding.fix}`
    : `${label} ${finding.what}`
}

export async function runDoctor(argv: string[], env = process.env): Promise<number> {
  const args = readArgs(argv)
  if (args.printTemplate) {
    process.stdout.write(`${JSON.stringify(secretsTemplate(), null, 2)}\n`)
    // On stderr, so that stdout stays the file: which secret is whose, and what to do with it.
    for (const { reader, names } of secretsByReader()) {
      process.stderr.write(`${reader}: ${names.join(', ')}\n`)
    }
    process.stderr.write(
      'fill in those you use, delete the rest, then: npx wrangler secret bulk FILE --env ENV\n',
    )
    return 0
  }
  const config = await readWranglerConfig(args.config, args.env)
  const secrets = readSecrets(args.secretsFile, env)
  const findings = checkDeployment({ envName: args.env, config, secrets })
  if (args.checkNetwork) {
    findings.push(...(await checkPostgres(env)), ...(await checkRedis(secrets)))
  }
  const where = args.env ? `environment ${args.env}` : 'the top level (local; deploy with --env)'
  process.stdout.write(`doctor: ${config.name}, ${where}\n`)
  for (const finding of findings) process.stdout.write(`${formatFinding(finding)}\n`)
  const errors = findings.filter((f) => f.level === 'error').length
  const warnings = findings.filter((f) => f.level === 'warn').length
  process.stdout.write(`doctor: ${errors} errors, ${warnings} warnings\n`)
  return errors > 0 ? 1 : 0
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runDoctor(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      const usage = err instanceof UsageError
      process.stderr.write(`doctor: ${(err as Error).message}\n${usage ? `${USAGE}\n` : ''}`)
      process.exit(usage ? 2 : 1)
    },
  )
}
