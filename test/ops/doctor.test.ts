/**
 * The deployment checks of `npm run doctor`: each misconfiguration a deployment can carry is one
 * finding with a fix, a good configuration has no error, the queues' retention is one figure with
 * the docs, and with `--check-network` it finds Postgres unmigrated or migrated and Redis answering
 * or not. The command line itself: doctor-cli.test.ts.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRedisLayer } from '../../local/redis-layer'
import { createTestDatabase, databaseUrlOf, REDIS_URL } from '../../local/services'
import { REPO_ROOT, readWranglerConfig, type WranglerConfig } from '../../local/wrangler-config'
import { checkDeployment, type Finding } from '../../ops/deploy-checks'
import { checkPostgres, checkRedis } from '../../ops/deploy-reachability'
import { hours, QUEUE_RETENTION_SECONDS, spoolScheduleSeconds } from '../../ops/deploy-spool'
import { secretsTemplate, templateGuide } from '../../ops/secrets-template'
import { parseSpoolSettings } from '../../worker/spool/config'
import { GOOD_SECRET, goodConfig, goodSecrets, teams } from './support/deployment'

function findings(config: WranglerConfig, secrets: Record<string, string>): Finding[] {
  return checkDeployment({ envName: 'production', config, secrets })
}

const errors = (list: Finding[]) => list.filter((f) => f.level === 'error').map((f) => f.what)
const warnings = (list: Finding[]) => list.filter((f) => f.level === 'warn')

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
      /up to 1821.5 h, too close to the 14 days a queue can keep a message/,
    ],
    [
      'no R2 bucket for the claim check',
      (c) => c.r2Buckets.pop(),
      /SPOOL_BODIES R2 bucket is not bound: an event over 120,000 bytes cannot wait for the origin/,
    ],
    [
      "the connections' KV namespace under wrangler.toml's placeholder id",
      (c) => Object.assign(c.kvNamespaces[0] ?? {}, { id: '0'.repeat(32) }),
      /CONNECTIONS KV namespace id is wrangler.toml's placeholder/,
    ],
    [
      'EDGE_KEKS not of the form the origin seals with',
      (_, s) => Object.assign(s, { EDGE_KEKS: 'edge:not-32-bytes' }),
      /EDGE_KEKS is not id:<32 bytes base64>/,
    ],
    [
      'Teams keys fetched over plain HTTP',
      (c, s) => {
        Object.assign(s, { ...teams })
        c.vars.TEAMS_OPENID_METADATA_URL =
          'http://login.botframework.com/v1/.well-known/openidconfiguration'
      },
      /TEAMS_OPENID_METADATA_URL is plain HTTP: anyone on the path can swap the signing keys/,
    ],
    [
      'Teams keys from a host that is not Microsoft',
      (c, s) => {
        Object.assign(s, { ...teams })
        c.vars.TEAMS_OPENID_METADATA_URL = 'https://keys.attacker.test/openid'
      },
      /TEAMS_OPENID_METADATA_URL names keys.attacker.test, not Microsoft's Bot Framework/,
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

  it('reads the environments wrangler.toml ships', async () => {
    const config = await readWranglerConfig(undefined, 'staging')
    const list = checkDeployment({ envName: 'staging', config, secrets: goodSecrets() })
    expect(errors(list)).toEqual([
      'ORIGIN_URL is still the placeholder https://origin.example.com',
      "the CONNECTIONS KV namespace id is wrangler.toml's placeholder",
    ])
  })

  it('Microsoft’s own Teams metadata (the public and the US Government cloud) is no finding', () => {
    for (const url of [
      'https://login.botframework.com/v1/.well-known/openidconfiguration',
      'https://login.botframework.azure.us/v1/.well-known/openidconfiguration',
    ]) {
      const config = goodConfig()
      config.vars.TEAMS_OPENID_METADATA_URL = url
      const list = findings(config, { ...goodSecrets(), ...teams })
      expect(list.filter((f) => f.what.includes('TEAMS_OPENID_METADATA_URL'))).toEqual([])
      expect(list).toContainEqual({ level: 'ok', what: 'channel teams has what it needs', fix: '' })
    }
  })

  it('at the local top level the trusting Teams metadata is a warning (the dev stack uses it)', () => {
    const config = goodConfig()
    config.vars.TEAMS_OPENID_METADATA_URL = 'http://127.0.0.1:8790/openid'
    const secrets = { ...goodSecrets(), ...teams }
    const list = checkDeployment({ envName: undefined, config, secrets })
    expect(errors(list).join('\n')).not.toMatch(/TEAMS/)
    const warned = warnings(list).map((f) => f.what)
    expect(warned.filter((what) => /TEAMS_OPENID/.test(what))).toHaveLength(2)
  })

  it('the guide: Teams has no secrets and its app ids are a variable; no reader line is empty', () => {
    const guide = templateGuide('production')
    expect(guide).toContain(
      'channel teams: no secrets; variables, in [env.production.vars]: TEAMS_APP_IDS',
    )
    expect(guide).toMatch(
      /^channel telegram: TELEGRAM_SECRET_TOKEN, .*; variables, in \[env.production.vars\]: TELEGRAM_BOT_ID$/m,
    )
    for (const line of guide.trimEnd().split('\n')) expect(line).not.toMatch(/:\s*$/)
    expect(Object.keys(secretsTemplate())).not.toContain('TEAMS_APP_IDS')
  })
})

describe("the queues' retention: one figure", () => {
  const text = (file: string) => readFileSync(join(REPO_ROOT, file), 'utf8')

  it("the doctor's commands, deploying.md's step 4 and Cloudflare's maximum agree", () => {
    // Cloudflare: 60 s to 1,209,600 s (14 days) on a paid plan.
    expect(QUEUE_RETENTION_SECONDS).toBe(1_209_600)
    const queues = warnings(findings(goodConfig(), goodSecrets())).find((f) =>
      f.what.startsWith('queues q-production and q-production-dead'),
    )
    expect(queues?.what).toContain(`keep messages 14 days (${QUEUE_RETENTION_SECONDS} s)`)
    expect(queues?.fix).toContain(
      `npx wrangler queues create q-production-dead --message-retention-period-secs ${QUEUE_RETENTION_SECONDS}`,
    )
    const step4 = text('docs/deploying.md')
      .split('4. **Queues and the bucket**')[1]
      ?.split('5. **Deploy**')[0]
    expect(step4).toContain(`--message-retention-period-secs ${QUEUE_RETENTION_SECONDS}`)
    expect(step4).toContain('14 days')
  })

  it('stated once: guarantees.md refers to step 4 and gives the retry schedule the doctor computes', () => {
    const guarantees = text('docs/guarantees.md')
    expect(guarantees).not.toMatch(/\b(4|14) days\b/)
    expect(guarantees).toContain('(deploying.md#4-the-worker)')
    const span = spoolScheduleSeconds(parseSpoolSettings({}, [], []))
    expect(hours(span)).toBe('10.4')
    expect(guarantees).toContain(`up to ${hours(span)} hours`)
    // The schedule fits the retention with room to spare.
    expect(span * 1.5).toBeLessThan(QUEUE_RETENTION_SECONDS)
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
