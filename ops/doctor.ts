/**
 * `npm run doctor -- [--env NAME] [--secrets-file PATH] [--check-network]`: what a deployment of
 * one wrangler.toml environment needs, one line per finding with its fix (ops/deploy-checks.ts;
 * with `--check-network`, ops/deploy-reachability.ts).
 *
 * The Worker's secrets come from `--secrets-file` (the JSON object `wrangler secret bulk` takes,
 * or a dotenv file such as `.dev.vars`), else from this process's environment (only the names the
 * Worker reads as secrets). A file that cannot be read, or is neither, is an error, never an empty
 * set of secrets. The network checks read the origin's DATABASE_URL (DATABASE_DRIVER,
 * NEON_WS_PROXY) from the environment and Upstash's URL and token from the secrets; with the
 * database they list the tenants both the Worker's variables and the registry name
 * (ops/deploy-registry.ts: the registry's connection serves them).
 *
 * `--write-secrets-template FILE` writes the bulk file to fill in (every secret the Worker reads,
 * empty: leave out the channels you do not use), readable by its owner only, and never over a file
 * that exists (it may hold secrets already). The tool writes it rather than the shell: `npm run`
 * prints its own banner on stdout, so `npm run doctor -- … > FILE` is not JSON.
 * `--print-secrets-template` prints the same to stdout (`npm run --silent`).
 *
 * Exit codes: 0 no error (warnings allowed), 1 an error found, 2 usage.
 * @module
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs, parseEnv } from 'node:util'
import { readWranglerConfig, WRANGLER_TOML } from '../local/wrangler-config'
import { checkDeployment, type Finding, SECRET_NAMES, WORKER_VARIABLE_NAMES } from './deploy-checks'
import { checkPostgres, checkRedis } from './deploy-reachability'
import { checkRegistryOverlap } from './deploy-registry'
import { templateGuide, templateText, writeTemplate } from './secrets-template'

const USAGE = `usage: npm run doctor -- [--env staging|production] [--config wrangler.toml]
  [--secrets-file secrets.json] [--check-network]
  [--write-secrets-template secrets.json | --print-secrets-template]`

class UsageError extends Error {
  readonly code = 'usage'
}

interface DoctorArgs {
  env: string | undefined
  config: string
  secretsFile: string | undefined
  checkNetwork: boolean
  printTemplate: boolean
  writeTemplate: string | undefined
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
        'write-secrets-template': { type: 'string' },
      },
      strict: true,
    })
    return {
      env: values.env,
      config: values.config ?? WRANGLER_TOML,
      secretsFile: values['secrets-file'],
      checkNetwork: values['check-network'] ?? false,
      printTemplate: values['print-secrets-template'] ?? false,
      writeTemplate: values['write-secrets-template'],
    }
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

/** A path as the person typed it: `npm run` moves to the package root, INIT_CWD is where they were. */
export function fromCaller(path: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.INIT_CWD || process.cwd(), path)
}

/** The secrets file, or the Worker's secrets found in `env`; string values only. */
export function readSecrets(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
): Record<string, string> {
  if (!file) return pick(env, SECRET_NAMES)
  let text: string
  try {
    text = readFileSync(fromCaller(file, env), 'utf8')
  } catch (err) {
    throw new UsageError(`--secrets-file: cannot read it (${(err as NodeJS.ErrnoException).code})`)
  }
  // A dotenv file (.dev.vars) also holds the origin's and the stack's: the Worker's variables
  // only, plain ones included (`wrangler dev` puts them on top of [vars], as here).
  const json = file.endsWith('.json') || text.trimStart().startsWith('{')
  if (!json) return pick(parseDotenv(text), WORKER_VARIABLE_NAMES)
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

const DOTENV_LINE = /^\s*(?:#.*|(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*\s*=.*)?$/

/**
 * A dotenv file, every line a `NAME=value`, a comment or blank: dotenv itself skips any other line
 * without a word, so a stray line would read as a secret not set. Names the line, never its text.
 */
function parseDotenv(text: string): NodeJS.Dict<string> {
  const stray = text.split(/\r?\n/).findIndex((line) => !DOTENV_LINE.test(line))
  if (stray >= 0) {
    throw new UsageError(
      `--secrets-file: line ${stray + 1} is not NAME=value: neither JSON nor a dotenv file`,
    )
  }
  return parseEnv(text)
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

function writeTemplateFile(args: DoctorArgs): number {
  const file = args.writeTemplate ?? ''
  try {
    writeTemplate(fromCaller(file))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new UsageError(
      code === 'EEXIST'
        ? `--write-secrets-template: ${file} exists (it may hold secrets): remove it or name another file`
        : `--write-secrets-template: cannot write ${file} (${code})`,
    )
  }
  process.stdout.write(`wrote ${file} (readable by you only)\n${templateGuide(args.env, file)}`)
  return 0
}

export async function runDoctor(argv: string[], env = process.env): Promise<number> {
  const args = readArgs(argv)
  if (args.writeTemplate !== undefined) return writeTemplateFile(args)
  if (args.printTemplate) {
    process.stdout.write(templateText())
    // On stderr, so that stdout stays the file: which secret is whose, and what to do with it.
    process.stderr.write(templateGuide(args.env))
    return 0
  }
  const config = await readWranglerConfig(args.config, args.env)
  const secrets = readSecrets(args.secretsFile, env)
  const findings = checkDeployment({ envName: args.env, config, secrets })
  if (args.checkNetwork) {
    findings.push(...(await checkPostgres(env)), ...(await checkRedis(secrets)))
    findings.push(...(await checkRegistryOverlap(env, secrets)))
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
