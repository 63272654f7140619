/**
 * The outbox relay and failure replay against real Postgres (through the Neon driver and the
 * local proxy) and a real downstream HTTP server that counts hand-offs by Idempotency-Key. Time is
 * not waited for: a failure is made due by moving its `next_attempt_at`, as the clock would.
 */
import { Registry } from 'prom-client'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createDatabase, type Database } from '../../../origin/db'
import { silentLogger } from '../../../origin/log'
import { loadRelayConfig, type RelayConfig } from '../../../origin/outbox/config'
import { createRelayMetrics } from '../../../origin/outbox/metrics'
import { type RelayDeps, relayPass } from '../../../origin/outbox/relay'
import { startDownstream, type TestDownstream } from '../../support/downstream'
import {
  eventFixture,
  type OriginTestbed,
  runFailuresCli,
  startOriginTestbed,
} from '../../support/origin'

/** In DOWNSTREAM_URL's query, as a real deployment might carry one: never in a stored error. */
const URL_TOKEN = 'tok-never-logged-9f3b'

let tb: OriginTestbed
let downstream: TestDownstream
const opened: Array<{ close(): Promise<void> }> = []

beforeEach(async () => {
  ;[tb, downstream] = await Promise.all([startOriginTestbed(), startDownstream()])
}, 60_000)

afterEach(async () => {
  for (const resource of opened.splice(0)) await resource.close()
  await downstream?.close()
  await tb?.close()
})

function relayEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    DOWNSTREAM_URL: `${downstream.url}/hooks/outbox?token=${URL_TOKEN}`,
    DOWNSTREAM_TIMEOUT_MS: '2000',
    FAILURE_BACKOFF_BASE_MS: '60000',
    FAILURE_BACKOFF_MAX_MS: '600000',
    ...overrides,
  }
}

/** A relay as a pod runs it: its own pool, its own metrics registry. */
function relay(overrides: Record<string, string> = {}): RelayDeps & { registry: Registry } {
  const config = loadRelayConfig(relayEnv(overrides)) as RelayConfig
  const db: Database = createDatabase({
    databaseUrl: tb.databaseUrl,
    neonWsProxy: tb.wsProxy,
    poolMax: 3,
    connectTimeoutMs: 5_000,
    queryTimeoutMs: 5_000,
    logger: silentLogger,
  })
  opened.push(db)
  const registry = new Registry()
  return { db, config, logger: silentLogger, metrics: createRelayMetrics(registry, db), registry }
}

async function ingest(count: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const { status, body } = await tb.post(await eventFixture())
    expect(status).toBe(201)
    ids.push(body.messageId as string)
  }
  return ids
}

async function outboxIds(): Promise<string[]> {
  const { rows } = await tb.sql.query<{ id: string }>('SELECT id FROM outbox ORDER BY id')
  return rows.map((r) => String(r.id))
}

interface FailureRow {
  id: string
  channel: string
  stage: string
  status: string
  attempts: number
  outbox_id: string
  message_id: string
  delivery_key: string
  error: string
  due_in_ms: number
}

async function failures(): Promise<FailureRow[]> {
  const { rows } = await tb.sql.query<FailureRow>(
    `SELECT id::text, channel, stage, status, attempts, outbox_id::text, message_id::text,
            delivery_key, error,
            (extract(epoch FROM next_attempt_at - now()) * 1000)::int AS due_in_ms
       FROM channel_failures ORDER BY id`,
  )
  return rows
}

/** What the clock would do: every pending failure is due now. */
async function makeDue(): Promise<void> {
  await tb.sql.query("UPDATE channel_failures SET next_attempt_at = now() WHERE status = 'pending'")
}

async function unprocessed(): Promise<number> {
  return tb.count('outbox', 'processed_at IS NULL')
}

/** `npm run failures -- ...` as an operator runs it, against this test's database. */
function cli(args: string[], env: Record<string, string> = relayEnv()) {
  return runFailuresCli(tb, args, env)
}

describe('the outbox relay', () => {
  it('hands each new row downstream once, under Idempotency-Key outbox-{id}, and marks it processed', async () => {
    const messageIds = await ingest(5)
    const r = relay()

    expect(await relayPass(r)).toMatchObject({ relayed: 5, failed: 0 })
    expect(await relayPass(r)).toMatchObject({ relayed: 0, failed: 0, retried: 0 })

    const keys = (await outboxIds()).map((id) => `outbox-${id}`)
    expect([...downstream.deliveredByKey().entries()].sort()).toEqual(
      keys.map((k) => [k, 1]).sort(),
    )
    expect(
      downstream
        .seen()
        .map((s) => s.body.messageId)
        .sort(),
    ).toEqual([...messageIds].sort())
    expect(downstream.seen()[0]?.body).toMatchObject({ topic: 'message.created' })
    expect(await unprocessed()).toBe(0)
  })

  it('downstream down: a channel_failures row without secrets; retried with backoff once it recovers', async () => {
    const [messageId] = await ingest(1)
    const [outboxId] = await outboxIds()
    const r = relay()
    downstream.setMode({ kind: 'status', status: 503 })

    expect(await relayPass(r)).toMatchObject({ relayed: 0, failed: 1 })

    const [failure] = await failures()
    expect(failure).toMatchObject({
      channel: 'slack',
      stage: 'downstream',
      status: 'pending',
      attempts: 1,
      outbox_id: outboxId,
      message_id: messageId,
      error: 'downstream answered HTTP 503',
    })
    expect(failure?.delivery_key).toMatch(/^Ev/)
    // Base 60 s, equal jitter: due in 30 to 60 s, not now.
    expect(failure?.due_in_ms).toBeGreaterThan(25_000)
    expect(failure?.due_in_ms).toBeLessThanOrEqual(60_000)
    expect(await unprocessed()).toBe(1)

    // Not due yet: neither the retry path nor the new-row path touches it.
    expect(await relayPass(r)).toMatchObject({ relayed: 0, failed: 0, retried: 0 })
    expect(downstream.seen()).toHaveLength(1)

    downstream.setMode({ kind: 'ok' })
    await makeDue()
    expect(await relayPass(r)).toMatchObject({ retried: 1, resolved: 1 })

    expect(await failures()).toMatchObject([{ status: 'resolved', attempts: 2 }])
    expect(await unprocessed()).toBe(0)
    expect(downstream.deliveredByKey()).toEqual(new Map([[`outbox-${outboxId}`, 1]]))
    // The same key on both attempts: a downstream that honours it applies the row once.
    expect(downstream.seen().map((s) => s.key)).toEqual([
      `outbox-${outboxId}`,
      `outbox-${outboxId}`,
    ])
    expect(await relayPass(r)).toMatchObject({ relayed: 0, retried: 0 })
  })

  it('a dropped connection is a failure too; the stored error names the cause, not the URL', async () => {
    await ingest(1)
    downstream.setMode({ kind: 'reset' })

    await relayPass(relay())

    const [failure] = await failures()
    expect(failure?.error).toMatch(/^downstream unreachable \(/)
    expect(failure?.error).not.toContain(URL_TOKEN)
    expect(failure?.error).not.toContain('127.0.0.1')
  })

  it('dead after FAILURE_MAX_ATTEMPTS; a CLI replay after recovery hands it off once', async () => {
    await ingest(1)
    const [outboxId] = await outboxIds()
    const env = relayEnv({ FAILURE_MAX_ATTEMPTS: '3' })
    const r = relay({ FAILURE_MAX_ATTEMPTS: '3' })
    downstream.setMode({ kind: 'status', status: 500 })

    await relayPass(r)
    await makeDue()
    expect(await relayPass(r)).toMatchObject({ retried: 1, dead: 0 })
    await makeDue()
    expect(await relayPass(r)).toMatchObject({ retried: 1, dead: 1 })

    const [failure] = await failures()
    expect(failure).toMatchObject({ status: 'dead', attempts: 3 })
    // Dead rows are not retried any more, however long one waits.
    await tb.sql.query('UPDATE channel_failures SET next_attempt_at = now()')
    expect(await relayPass(r)).toMatchObject({ retried: 0, relayed: 0 })
    expect(downstream.seen()).toHaveLength(3)
    const metrics = await r.registry.metrics()
    expect(metrics).toContain('inbound_channel_failures{status="dead"} 1')
    expect(metrics).toContain('inbound_outbox_dead_total 1')

    const listed = await cli(['list', '--status', 'dead'], env)
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(
      new RegExp(`^${failure?.id} +dead +downstream +3 +${outboxId} `, 'm'),
    )
    expect(listed.stdout).toContain('downstream answered HTTP 500')
    expect(listed.stdout).not.toContain(URL_TOKEN)

    downstream.setMode({ kind: 'ok' })
    const replayed = await cli(['replay', String(failure?.id)], env)
    expect(replayed).toMatchObject({ code: 0 })
    expect(replayed.stdout).toContain(`handed off (Idempotency-Key outbox-${outboxId}); resolved`)
    expect(await failures()).toMatchObject([{ status: 'resolved', attempts: 4 }])
    expect(await unprocessed()).toBe(0)

    const again = await cli(['replay', String(failure?.id)], env)
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('already resolved')
    expect(downstream.deliveredByKey()).toEqual(new Map([[`outbox-${outboxId}`, 1]]))
  })

  it('replay --all-dead hands off every dead row once; a failing replay keeps the row dead (exit 1)', async () => {
    await ingest(3)
    const env = relayEnv({ FAILURE_MAX_ATTEMPTS: '1' })
    downstream.setMode({ kind: 'status', status: 502 })
    expect(await relayPass(relay({ FAILURE_MAX_ATTEMPTS: '1' }))).toMatchObject({ dead: 3 })

    const stillDown = await cli(['replay', '--all-dead'], env)
    expect(stillDown.code).toBe(1)
    expect(stillDown.stdout).toContain('replayed 3 dead failures: 0 resolved, 3 still failing')
    expect((await failures()).map((f) => [f.status, f.attempts])).toEqual([
      ['dead', 2],
      ['dead', 2],
      ['dead', 2],
    ])

    downstream.setMode({ kind: 'ok' })
    const recovered = await cli(['replay', '--all-dead'], env)
    expect(recovered.code).toBe(0)
    expect(recovered.stdout).toContain('replayed 3 dead failures: 3 resolved, 0 still failing')
    expect(await unprocessed()).toBe(0)
    const delivered = downstream.deliveredByKey()
    expect(delivered.size).toBe(3)
    expect([...delivered.values()]).toEqual([1, 1, 1])
    expect((await cli(['replay', '--all-dead'], env)).stdout).toContain('no dead failures')
  })

  it('two relays at once: every outbox row is handed off exactly once', async () => {
    await ingest(40)
    const a = relay({ OUTBOX_BATCH_SIZE: '7' })
    const b = relay({ OUTBOX_BATCH_SIZE: '7' })
    downstream.setMode({ kind: 'ok', delayMs: 20 })

    const drainAll = async (r: RelayDeps) => {
      for (let i = 0; i < 50 && (await unprocessed()) > 0; i++) await relayPass(r)
    }
    await Promise.all([drainAll(a), drainAll(b)])

    expect(await unprocessed()).toBe(0)
    const delivered = downstream.deliveredByKey()
    expect(delivered.size).toBe(40)
    expect([...delivered.values()].every((n) => n === 1)).toBe(true)
    expect(downstream.seen()).toHaveLength(40)
  })
})

describe('npm run failures', () => {
  it('answers usage errors with 2, unknown rows and pending rows with 1', async () => {
    const usage = await cli(['frobnicate'])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('usage: npm run failures')

    const missing = await cli(['replay', '424242'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('no such row')

    await ingest(1)
    downstream.setMode({ kind: 'status', status: 503 })
    await relayPass(relay())
    const [failure] = await failures()
    const pending = await cli(['replay', String(failure?.id)])
    expect(pending.code).toBe(1)
    expect(pending.stderr).toContain('pending: the relay retries it at')
    // A downstream row cannot be replayed without somewhere to hand it (inbound rows can).
    const noDownstream = await cli(['replay', String(failure?.id)], { DOWNSTREAM_URL: '' })
    expect(noDownstream.code).toBe(2)
    expect(noDownstream.stderr).toContain('DOWNSTREAM_URL is not set')
    expect(downstream.seen()).toHaveLength(1)

    const empty = await cli(['list', '--status', 'dead'])
    expect(empty).toMatchObject({ code: 0, stdout: 'no dead failures\n' })
  })
})
