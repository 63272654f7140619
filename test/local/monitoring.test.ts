/**
 * The alerting rules and the dashboard (monitoring/) against the origin as it runs. Every metric a
 * rule or a panel names is in a real `GET /metrics` scrape of `npm run origin` with the Gmail
 * poller, the outbox relay and the Worker's claim store configured, after one event, one flush
 * of the Worker's decision counts and a queued event counted in Redis: so the spool's gauges and
 * the gateway's counter are read from real Redis and Postgres, and show what they were given. The
 * rules parse and pass their unit tests under `promtool` (Debian's prometheus package; .ci/run
 * installs it).
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import type { OriginHandle } from '../../local/origin-process'
import { createTestDatabase, REDIS_URL, runId, type TestDatabase } from '../../local/services'
import { type RunningUpstashRest, realRedis, startUpstashRest } from '../../local/upstash-rest'
import { REPO_ROOT } from '../../local/wrangler-config'
import { type FakeGmail, startFakeGmail } from '../support/fake-gmail'
import {
  eventFixture,
  fetchMetrics,
  signedPost,
  startOriginPod,
  TEST_OPERATOR_TOKEN,
} from '../support/origin'

const PROMTOOL = process.env.PROMTOOL_PATH || '/usr/bin/promtool'
const RULES = join(REPO_ROOT, 'monitoring/prometheus/alerts.yml')
const RULE_TESTS = join(REPO_ROOT, 'monitoring/prometheus/alerts.test.yml')
const DASHBOARD = join(REPO_ROOT, 'monitoring/grafana/inbound-dedup-origin.json')

/** Series Prometheus makes itself, not the origin. */
const PROMETHEUS_OWN = new Set(['up'])
const PROMQL_WORDS = new Set(
  `abs absent absent_over_time avg avg_over_time bottomk ceil changes clamp clamp_max clamp_min
   count count_over_time delta deriv floor group histogram_quantile idelta increase irate
   label_replace max max_over_time min min_over_time quantile rate resets round scalar sort
   sort_desc stddev sum sum_over_time time timestamp topk vector by without on ignoring
   group_left group_right bool and or unless offset`.split(/\s+/),
)

/**
 * The metric names a PromQL expression reads: what is left once strings, label matchers, ranges,
 * Grafana variables, grouping clauses, numbers, functions and keywords are taken out.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
  const names = bare.match(/[A-Za-z_:][A-Za-z0-9_:]*/g) ?? []
  return [...new Set(names.filter((name) => !PROMQL_WORDS.has(name)))]
}

function ruleExpressions(): string[] {
  const doc = parse(readFileSync(RULES, 'utf8')) as { groups: { rules: { expr: string }[] }[] }
  return doc.groups.flatMap((group) => group.rules.map((rule) => rule.expr))
}

interface Panel {
  targets?: { expr?: string }[]
  panels?: Panel[]
}

function dashboardExpressions(): string[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: Panel[]
    templating: { list: { query?: unknown }[] }
  }
  const panels = (list: Panel[]): Panel[] => list.flatMap((p) => [p, ...panels(p.panels ?? [])])
  const targets = panels(dashboard.panels).flatMap((p) => p.targets ?? [])
  const variables = dashboard.templating.list
    .map((v) => (v.query as { query?: string } | undefined)?.query)
    .filter((q): q is string => typeof q === 'string')
    .map((q) => q.replace(/^label_values\(([^,]+),.*\)$/, '$1'))
  return [...targets.map((t) => t.expr ?? ''), ...variables].filter(Boolean)
}

/** Every series name of a scrape, histograms under their own name too. */
function scrapedNames(text: string): Set<string> {
  const names = new Set<string>()
  for (const line of text.split('\n')) {
    const typed = /^# TYPE (\S+) (\w+)/.exec(line)
    if (typed?.[1]) names.add(typed[1])
    const sample = /^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]/.exec(line)
    if (sample?.[1]) names.add(sample[1])
  }
  return names
}

function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  if (!existsSync(PROMTOOL)) {
    throw new Error(
      `promtool not found at ${PROMTOOL}: install Debian's prometheus package (apt-get install -y prometheus; .ci/run does) or set PROMTOOL_PATH`,
    )
  }
  return new Promise((resolve) => {
    execFile(PROMTOOL, args, { cwd: REPO_ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
      resolve({ code, output: `${stdout}${stderr}` })
    })
  })
}

describe('reading metric names out of PromQL', () => {
  it('keeps the names, drops functions, labels, ranges, groupings and variables', () => {
    expect(
      metricNames(
        'sum by (channel, reason) (rate(inbound_a_total{decision="x", channel=~"$channel"}[$__rate_interval])) / on (channel) inbound_b > 0.5 and up{job="j"} == 0',
      ),
    ).toEqual(['inbound_a_total', 'inbound_b', 'up'])
    expect(metricNames('histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))')).toEqual([
      'x_bucket',
    ])
  })
})

describe('monitoring/ against a real scrape of the origin', () => {
  let db: TestDatabase
  let upstash: RunningUpstashRest
  let gmail: FakeGmail
  let downstream: Server
  let origin: OriginHandle
  let redis: Redis
  const secret = `monitoring-secret-${randomBytes(8).toString('hex')}`
  const prefix = `test:monitoring:${runId()}:`

  beforeAll(async () => {
    const token = `upstash-${randomBytes(8).toString('hex')}`
    ;[db, upstash, gmail] = await Promise.all([
      createTestDatabase(),
      startUpstashRest({ backend: realRedis(REDIS_URL), token }),
      startFakeGmail({ mailbox: `support-${runId()}@inbound.example` }),
    ])
    downstream = createServer((_req, res) => res.end('ok')).listen(0, '127.0.0.1')
    await new Promise((resolve) => downstream.once('listening', resolve))
    const address = downstream.address() as { port: number }
    redis = new Redis(REDIS_URL)
    origin = await startOriginPod(db.url, secret, {
      OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
      DOWNSTREAM_URL: `http://127.0.0.1:${address.port}/items`,
      ...gmail.env,
      UPSTASH_REDIS_REST_URL: upstash.url,
      UPSTASH_REDIS_REST_TOKEN: token,
      REDIS_KEY_PREFIX: prefix,
    })
  }, 120_000)

  afterAll(async () => {
    await origin?.kill('SIGTERM')
    await redis?.del(`${prefix}dedup:stats`)
    redis?.disconnect()
    downstream?.close()
    await Promise.all([gmail?.close(), upstash?.close()])
    await db?.drop()
  })

  it('every metric a rule or a panel names is served; the spool gauges read what the Worker counted', async () => {
    const event = await eventFixture()
    expect((await signedPost(origin.url, event, secret)).status).toBe(201)
    const minute = Math.floor(Date.now() / 60_000) * 60
    const row = (decision: string, decidedBy: string, reason: string, count: number) => ({
      ...{ minute, channel: 'slack', decision, decidedBy, reason, count },
      histogram: [count, 0, 0, 0, 0, 0],
    })
    const batch = {
      id: crypto.randomUUID(),
      rows: [
        row('spooled', 'gateway', '', 2),
        row('spooled', 'gateway', 'shed', 1),
        row('retried', 'gateway', 'origin_503', 4),
        row('rejected', 'gateway', 'bad_signature', 1),
        row('forwarded', 'postgres', 'redis_unavailable', 1),
        row('duplicate', 'redis', 'payload_mismatch', 1),
      ],
      keys: [],
      dropped: 0,
    }
    const flushed = await signedPost(`${origin.url}/v1/decisions`, JSON.stringify(batch), secret)
    expect(flushed.status).toBe(200)
    // Three queued by the front doors, none landed yet (the Worker's counters in Redis).
    await redis.hincrby(`${prefix}dedup:stats`, 'spool_queued:slack', 3)

    const text = await (await fetchMetrics(origin.url)).text()
    const served = scrapedNames(text)
    const named = [...ruleExpressions(), ...dashboardExpressions()].flatMap(metricNames)
    expect(named.length).toBeGreaterThan(30)
    const missing = [...new Set(named)].filter((n) => !served.has(n) && !PROMETHEUS_OWN.has(n))
    expect(missing).toEqual([])

    expect(text).toMatch(/^inbound_spool_backlog\{channel="slack"\} 3$/m)
    const age = Number(
      /^inbound_spool_oldest_age_seconds\{channel="slack"\} (\S+)$/m.exec(text)?.[1],
    )
    expect(age).toBeGreaterThanOrEqual(0)
    expect(age).toBeLessThan(120)
    expect(text).toMatch(
      /^inbound_gateway_decisions_total\{channel="slack",decision="retried",decided_by="gateway",reason="origin_503"\} 4$/m,
    )
    // The same batch again (a flush resent after a timeout) is not counted twice.
    await signedPost(`${origin.url}/v1/decisions`, JSON.stringify(batch), secret)
    expect(await (await fetchMetrics(origin.url)).text()).toMatch(
      /^inbound_gateway_decisions_total\{channel="slack",decision="retried",decided_by="gateway",reason="origin_503"\} 4$/m,
    )
  })

  it('each alert links to its own section of docs/operations.md', () => {
    const doc = parse(readFileSync(RULES, 'utf8')) as {
      groups: { rules: { alert: string; annotations: { description: string } }[] }[]
    }
    const operations = readFileSync(join(REPO_ROOT, 'docs/operations.md'), 'utf8')
    for (const rule of doc.groups.flatMap((g) => g.rules)) {
      expect(operations).toContain(`\n### ${rule.alert}\n`)
      expect(rule.annotations.description).toContain(
        `docs/operations.md#${rule.alert.toLowerCase()}`,
      )
    }
  })

  it('promtool: the rules parse, and each alert fires on trouble and stays quiet on health', async () => {
    const checked = await promtool('check', 'rules', RULES)
    expect(checked.output).toMatch(/SUCCESS: \d+ rules found/)
    expect(checked.code).toBe(0)
    const tested = await promtool('test', 'rules', RULE_TESTS)
    expect(tested.output).toMatch(/SUCCESS/)
    expect(tested.code).toBe(0)
  })
})
