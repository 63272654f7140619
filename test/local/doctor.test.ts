/**
 * `npm run doctor`: each misconfiguration a deployment can carry is one finding with a fix, a good
 * configuration has no error, the CLI exits 1 on errors and never prints a secret, and with
 * `--check-network` it finds Postgres unmigrated or migrated and Redis answering or not.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkDeployment, type Finding, secretsTemplate } from '../../local/deploy-checks'
import { checkPostgres, checkRedis } from '../../local/deploy-reachability'
import { startRedisLayer } from '../../local/redis-layer'
import { createTestDatabase, databaseUrlOf, REDIS_URL } from '../../local/services'
import { REPO_ROOT, readWranglerConfig, type WranglerConfig } from '../../local/wrangler-config'

const GOOD_SECRET = 'a'.repeat(64)

function goodConfig(): WranglerConfig {
  return {
    name: 'inbound-dedup-production',
    main: 'worker/index.ts',
    compatibilityDate: '2026-04-01',
    compatibilityFlags: [],
    vars: { ORIGIN_URL: 'https://origin.acme.test', DEDUP_TTL_SECONDS: '86400' },
    queues: {
      producers: [
        { binding: 'SPOOL', queue: 'q-production' },
        { binding: 'SPOOL_DEAD', queue: 'q-production-dead' },
      ],
      consumers: [
        { queue: 'q-production', max_retries: 100, dead_letter_queue: 'q-production-dead' },
        { queue: 'q-production-dead', max_retries: 100 },
      ],
    },
    r2Buckets: [],
  }
}

const goodSecrets = () => ({
  ORIGIN_SHARED_SECRET: GOOD_SECRET,
  SLACK_SIGNING_SECRET: 'slack-signing-secret-value',
  UPSTASH_REDIS_REST_URL: 'https://redis.acme.test',
  UPSTASH_REDIS_REST_TOKEN: 'upstash-token-value',
})

function findings(config: WranglerConfig, secrets: Record<string, string>): Finding[] {
  return checkDeployment({ envName: 'production', config, secrets })
}

const errors = (list: Finding[]) => list.filter((f) => f.level === 'error').map((f) => f.what)

describe('deployment checks', () => {
  it('a good configuration has no error, and each finding of a problem has a fix', () => {
    const list = findings(goodConfig(), goodSecrets())
    expect(errors(list)).toEqual([])
    for (const finding of list) if (finding.level !== 'ok') expect(finding.fix).not.toBe('')
  })

  const cases: Array<[string, (c: WranglerConfig, s: Record<string, string>) => void, RegExp]> = [
    ['ORIGIN_URL unset', (c) => delete c.vars.ORIGIN_URL, /ORIGIN_URL is not set/],
    [
      'the placeholder ORIGIN_URL',
      (c) => Object.assign(c.vars, { ORIGIN_URL: 'https://origin.example.com' }),
      /placeholder/,
    ],
    [
      'a loopback ORIGIN_URL',
      (c) => Object.assign(c.vars, { ORIGIN_URL: 'http://127.0.0.1:8788' }),
      /loopback/,
    ],
    [
      'ORIGIN_URL over plain http',
      (c) => Object.assign(c.vars, { ORIGIN_URL: 'http://origin.acme.test' }),
      /not https/,
    ],
    [
      'no shared secret',
      (_, s) => delete s.ORIGIN_SHARED_SECRET,
      /ORIGIN_SHARED_SECRET is not set/,
    ],
    [
      'a short shared secret in the rotation list',
      (_, s) => Object.assign(s, { ORIGIN_SHARED_SECRET: `${GOOD_SECRET},short` }),
      /1 of its 2 entries are shorter than 32/,
    ],
    [
      'an operator token too short to resist guessing',
      (_, s) => Object.assign(s, { OPERATOR_TOKEN: 'short-token' }),
      /OPERATOR_TOKEN needs 16 characters or more/,
    ],
    [
      'a secret in [vars]',
      (c) => Object.assign(c.vars, { TWILIO_AUTH_TOKEN: 'x' }),
      /TWILIO_AUTH_TOKEN is a secret but sits in \[env.production.vars\]/,
    ],
    [
      'no channel at all',
      (_, s) => delete s.SLACK_SIGNING_SECRET,
      /no webhook channel is configured/,
    ],
    [
      'a channel half configured (WhatsApp without its app secret)',
      (_, s) => Object.assign(s, { WHATSAPP_VERIFY_TOKEN: 'verify-token-value' }),
      /channel whatsapp-cloud is configured but misses WHATSAPP_APP_SECRET/,
    ],
    [
      'no dead-letter queue on the spool',
      (c) => {
        const consumer = c.queues.consumers[0]
        if (consumer) delete consumer.dead_letter_queue
      },
      /no consumer with dead_letter_queue/,
    ],
    [
      'max_retries not above SPOOL_MAX_ATTEMPTS',
      (c) => Object.assign(c.queues.consumers[0] ?? {}, { max_retries: 5 }),
      /max_retries must stay above SPOOL_MAX_ATTEMPTS/,
    ],
    [
      'no SPOOL_DEAD producer',
      (c) => c.queues.producers.pop(),
      /SPOOL and SPOOL_DEAD queue producers are not both bound/,
    ],
    [
      'a retry schedule longer than a queue keeps a message',
      (c) => Object.assign(c.vars, { SPOOL_MAX_ATTEMPTS: '90', SPOOL_RETRY_MAX_SECONDS: '86400' }),
      /longer than a queue can keep a message/,
    ],
    [
      "a dedup TTL below Meta's 7-day horizon",
      (c) => Object.assign(c.vars, { DEDUP_TTL_SECONDS_WHATSAPP_CLOUD: '86400' }),
      /whatsapp-cloud: dedup TTL 86400 s is below its vendor's redelivery horizon \(691200 s\)/,
    ],
    [
      'a global dedup TTL below a day',
      (c) => Object.assign(c.vars, { DEDUP_TTL_SECONDS: '3600' }),
      /slack: dedup TTL 3600 s is below/,
    ],
  ]
  for (const [name, breakIt, expected] of cases) {
    it(`catches ${name}`, () => {
      const config = goodConfig()
      const secrets: Record<string, string> = goodSecrets()
      breakIt(config, secrets)
      const found = errors(findings(config, secrets))
      expect(found.join('\n')).toMatch(expected)
    })
  }

  it('a WeChat account in plain mode is warned about by its id; one in safe mode is not', () => {
    const secrets = {
      ...goodSecrets(),
      WECHAT_TOKENS_BY_ACCOUNT: 'gh_0123456789ab=plaintoken,gh_ba9876543210=safetoken',
      WECHAT_AES_KEYS_BY_ACCOUNT: `gh_ba9876543210=${'k'.repeat(43)}`,
      WECHAT_APP_IDS_BY_ACCOUNT: 'gh_ba9876543210=wx0123456789abcdef',
    }
    const plain = findings(goodConfig(), secrets).filter((f) => /plain mode/.test(f.what))
    expect(plain).toHaveLength(1)
    expect(plain[0]).toMatchObject({
      level: 'warn',
      what: expect.stringContaining('gh_0123456789ab'),
    })
    expect(plain[0]?.fix).toMatch(/WECHAT_AES_KEYS_BY_ACCOUNT/)
    expect(JSON.stringify(plain)).not.toMatch(/plaintoken|safetoken/)
  })

  it('a missing plain variable is set in the vars, a missing secret is put', () => {
    const secrets = { ...goodSecrets(), TELEGRAM_SECRET_TOKEN: 'telegram-token-value' }
    const telegram = findings(goodConfig(), secrets).find((f) => f.what.includes('TELEGRAM_BOT_ID'))
    expect(telegram?.fix).toBe('set TELEGRAM_BOT_ID in [env.production.vars]')
  })

  it('the template names every secret the Worker reads, the channels included', () => {
    const names = Object.keys(secretsTemplate())
    expect(names).toEqual(
      expect.arrayContaining([
        'ORIGIN_SHARED_SECRET',
        'SLACK_SIGNING_SECRET',
        'TWILIO_AUTH_TOKEN',
        'TELEGRAM_SECRET_TOKEN',
        'WHATSAPP_APP_SECRET',
        'UPSTASH_REDIS_REST_TOKEN',
      ]),
    )
    expect(names).not.toContain('ORIGIN_URL')
  })
})

interface Run {
  code: number
  stdout: string
  stderr: string
}

function doctor(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'local/doctor.ts', ...args],
      { cwd: REPO_ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
  })
}

describe('npm run doctor', () => {
  const dir = mkdtempSync(join(tmpdir(), 'inbound-dedup-doctor-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('on the shipped production environment: exit 1, the placeholder origin named, no secret printed', async () => {
    const file = join(dir, 'secrets.json')
    writeFileSync(file, JSON.stringify(goodSecrets()))
    const run = await doctor(['--env', 'production', '--secrets-file', file])
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/ERROR ORIGIN_URL is still the placeholder/)
    expect(run.stdout).toMatch(/doctor: 1 errors/)
    for (const value of Object.values(goodSecrets())) {
      if (!value.startsWith('https://')) expect(run.stdout).not.toContain(value)
    }
  })

  it('on a good environment of a wrangler.toml of its own: exit 0', async () => {
    const toml = join(dir, 'wrangler.toml')
    writeFileSync(
      toml,
      `name = "t"\nmain = "${join(REPO_ROOT, 'worker/index.ts')}"\ncompatibility_date = "2026-04-01"\n` +
        '[env.production]\nname = "t-production"\n[env.production.vars]\nORIGIN_URL = "https://origin.acme.test"\n' +
        '[[env.production.queues.producers]]\nbinding = "SPOOL"\nqueue = "q-p"\n' +
        '[[env.production.queues.producers]]\nbinding = "SPOOL_DEAD"\nqueue = "q-p-dead"\n' +
        '[[env.production.queues.consumers]]\nqueue = "q-p"\nmax_retries = 100\ndead_letter_queue = "q-p-dead"\n' +
        '[[env.production.queues.consumers]]\nqueue = "q-p-dead"\n',
    )
    const run = await doctor(['--env', 'production', '--config', toml], goodSecrets())
    expect(run.stdout).toMatch(/doctor: 0 errors/)
    expect(run.code).toBe(0)
  })

  it('on the dev configuration with .dev.vars.example: its loopback origin and short dev secret', async () => {
    const run = await doctor(['--secrets-file', '.dev.vars.example'])
    expect(run.code).toBe(1)
    const errorLines = run.stdout.split('\n').filter((line) => line.startsWith('ERROR'))
    expect(errorLines).toEqual([
      'ERROR ORIGIN_URL http://127.0.0.1:8788 is a loopback address: every event would spool',
      'ERROR ORIGIN_SHARED_SECRET: 1 of its 1 entries are shorter than 32 characters',
    ])
    expect(run.stdout).toContain('OK    channel telegram has what it needs')
  })

  it('a secrets file that is not JSON: exit 2, nothing of its text printed', async () => {
    const file = join(dir, 'broken.json')
    writeFileSync(file, '{"ORIGIN_SHARED_SECRET": "broken-secret-value')
    const run = await doctor(['--secrets-file', file])
    expect(run.code).toBe(2)
    expect(run.stdout + run.stderr).not.toContain('broken-secret-value')
  })

  it('--print-secrets-template prints the bulk file', async () => {
    const run = await doctor(['--print-secrets-template'])
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toEqual(secretsTemplate())
    // Which secret is whose, from the channels' own variables.
    expect(run.stderr).toMatch(/^channel whatsapp-cloud: WHATSAPP_APP_SECRET, /m)
    expect(run.stderr).toMatch(/^the gateway: ORIGIN_SHARED_SECRET, /m)
  })

  it('reads the environments wrangler.toml ships', async () => {
    const config = await readWranglerConfig(undefined, 'staging')
    const list = checkDeployment({ envName: 'staging', config, secrets: goodSecrets() })
    expect(errors(list)).toEqual(['ORIGIN_URL is still the placeholder https://origin.example.com'])
  })
})

describe('with --check-network', () => {
  let migrated: Awaited<ReturnType<typeof createTestDatabase>>
  beforeAll(async () => {
    migrated = await createTestDatabase()
  })
  afterAll(() => migrated?.drop())

  it('Postgres: migrated is ok; unmigrated and unreachable are reported', async () => {
    expect(await checkPostgres({ DATABASE_URL: migrated.url })).toEqual([
      { level: 'ok', what: 'Postgres (pg) answers and is migrated', fix: '' },
    ])
    const empty = await checkPostgres({ DATABASE_URL: databaseUrlOf('postgres') })
    expect(empty[0]?.what).toMatch(/no migrations applied/)
    const closed = await checkPostgres({ DATABASE_URL: 'postgres://u@127.0.0.1:1/x' })
    expect(closed[0]?.what).toMatch(/does not answer/)
  })

  it('Redis: PONG is ok, a wrong token is reported', async () => {
    const layer = await startRedisLayer({ redisUrl: REDIS_URL, token: 'right-token' })
    try {
      const url = layer.url
      expect(
        (
          await checkRedis({ UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: 'right-token' })
        )[0]?.level,
      ).toBe('ok')
      const wrong = await checkRedis({
        UPSTASH_REDIS_REST_URL: url,
        UPSTASH_REDIS_REST_TOKEN: 'wrong',
      })
      expect(wrong[0]?.what).toMatch(/answered 401/)
    } finally {
      await layer.stop()
    }
  })
})
