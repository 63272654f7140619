/**
 * Pure logic of the relay and the failures CLI: settings, backoff, argument parsing, its help.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../../origin/config'
import { loadCliConfig, runCli } from '../../../origin/failures/cli'
import { parseArgs, USAGE } from '../../../origin/failures/cli-args'
import { backoffMs, isExhausted, readRetryPolicy } from '../../../origin/failures/policy'
import { loadRelayConfig } from '../../../origin/outbox/config'

describe('loadRelayConfig', () => {
  it('is off (null) without DOWNSTREAM_URL: outbox rows stay for another consumer', () => {
    expect(loadRelayConfig({})).toBeNull()
    expect(loadRelayConfig({ DOWNSTREAM_URL: '  ' })).toBeNull()
  })

  it('has the documented defaults', () => {
    expect(loadRelayConfig({ DOWNSTREAM_URL: 'https://downstream.example/hook' })).toEqual({
      downstream: { url: 'https://downstream.example/hook', timeoutMs: 5_000 },
      pollIntervalMs: 1_000,
      batchSize: 20,
      retry: { maxAttempts: 8, baseMs: 5_000, maxMs: 900_000 },
    })
  })

  it('lists every problem at once, naming variables but not values', () => {
    const secretish = 'ftp://user:hunter2@downstream.example'
    let error: unknown
    try {
      loadRelayConfig({
        DOWNSTREAM_URL: secretish,
        FAILURE_MAX_ATTEMPTS: '0',
        FAILURE_BACKOFF_BASE_MS: '10',
        FAILURE_BACKOFF_MAX_MS: '5',
        OUTBOX_BATCH_SIZE: 'many',
      })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    const problems = (error as ConfigError).problems
    expect(problems).toHaveLength(4)
    expect(problems.join('\n')).toMatch(/DOWNSTREAM_URL.*FAILURE_MAX_ATTEMPTS/s)
    expect(problems.join('\n')).not.toContain('hunter2')
  })

  it('refuses a URL with credentials in it (fetch would refuse every hand-off)', () => {
    expect(() => loadRelayConfig({ DOWNSTREAM_URL: 'https://u:p@downstream.example' })).toThrow(
      ConfigError,
    )
  })
})

describe('backoff', () => {
  const policy = { maxAttempts: 8, baseMs: 1_000, maxMs: 10_000 }

  it('doubles from the base, with equal jitter: between half and all of the step', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(policy, n, 0))).toEqual([500, 1_000, 2_000, 4_000])
    expect([1, 2, 3, 4].map((n) => backoffMs(policy, n, 0.999_999))).toEqual([
      1_000, 2_000, 4_000, 8_000,
    ])
  })

  it('never exceeds the cap, however many failures', () => {
    for (const failures of [5, 10, 60, 1_000]) {
      expect(backoffMs(policy, failures, 0.999_999)).toBeLessThanOrEqual(10_000)
      expect(backoffMs(policy, failures, 0)).toBe(5_000)
    }
  })

  it('is exhausted at FAILURE_MAX_ATTEMPTS failed attempts (the first hand-off included)', () => {
    const defaults = readRetryPolicy({}, [])
    expect(isExhausted(defaults, 7)).toBe(false)
    expect(isExhausted(defaults, 8)).toBe(true)
  })
})

describe('npm run failures arguments', () => {
  it.each([
    [['list'], { name: 'list', status: undefined, limit: 100 }],
    [['list', '--status', 'dead'], { name: 'list', status: 'dead', limit: 100 }],
    [
      ['list', '--limit', '5', '--status', 'pending'],
      { name: 'list', status: 'pending', limit: 5 },
    ],
    [['replay', '42'], { name: 'replay', id: '42' }],
    [['replay', '--all-dead'], { name: 'replay-all-dead' }],
    [['--help'], { name: 'help' }],
    [['-h'], { name: 'help' }],
    [['help'], { name: 'help' }],
  ])('%j', (args, command) => {
    expect(parseArgs(args)).toEqual(command)
  })

  it.each([
    [[]],
    [['list', '--status', 'gone']],
    [['list', '--limit', '0']],
    [['replay']],
    [['replay', 'abc']],
    [['replay', '1', '2']],
    [['drop']],
  ])('refuses %j', (args) => {
    expect(() => parseArgs(args)).toThrow()
  })
})

describe('npm run failures -- --help', () => {
  it('prints the usage on stdout and exits 0, no error before it, no database opened', async () => {
    const out: string[] = []
    const err: string[] = []
    const io = { out: (line: string) => out.push(line), err: (line: string) => err.push(line) }
    expect(await runCli(['--help'], {}, io)).toBe(0)
    expect(out.join('\n')).toBe(USAGE)
    expect(err).toEqual([])
  })
})

describe('npm run failures settings', () => {
  it('reads the database settings the way the origin does (pool wait 1000 ms, or half ORIGIN_TIMEOUT_MS)', () => {
    const database = (env: Record<string, string>) => {
      const origin = loadConfig({ ...env, ORIGIN_SHARED_SECRET: 's' })
      const { databaseUrl, neonWsProxy, dbQueryTimeoutMs, dbConnectTimeoutMs } = origin
      return { databaseUrl, neonWsProxy, dbQueryTimeoutMs, dbConnectTimeoutMs }
    }
    const env = { DATABASE_URL: 'postgres://u@db.example/x', NEON_WS_PROXY: '127.0.0.1:4444/v2' }
    expect(loadCliConfig(env).database).toMatchObject(database(env))
    expect(loadCliConfig(env).database).toMatchObject({ dbConnectTimeoutMs: 1000 })
    const short = { ...env, ORIGIN_TIMEOUT_MS: '800', DB_QUERY_TIMEOUT_MS: '700' }
    expect(loadCliConfig(short).database).toMatchObject(database(short))
    expect(loadCliConfig(short).database).toMatchObject({ dbConnectTimeoutMs: 400 })
  })
})
