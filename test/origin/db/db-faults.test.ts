/**
 * The origin and its database connections under faults: a connection that drops inside a
 * transaction (the process must live on, answer 503 and reconnect), statements bounded on the
 * server whether or not they run in a transaction, the pool wait bounded below the Worker's forward
 * budget, and no work done for a request whose client has gone.
 *
 * The waits are real: a separate pg session holds a row lock, so the origin's statement waits in
 * Postgres; the tests check the rows and pg_stat_activity, not only the answers.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { InboundEvent, IngestResult } from '../../../contract/event'
import { signForward } from '../../../contract/forward-signature'
import { startNeonWsProxy } from '../../../local/neon-ws-proxy'
import { startOrigin } from '../../../local/origin-process'
import { rawEmail } from '../../../local/vendor-deliveries'
import { ConfigError, loadConfig } from '../../../origin/config'
import { createDatabase } from '../../../origin/db'
import { DatabaseUnavailableError } from '../../../origin/errors'
import { createLogger, silentLogger } from '../../../origin/log'
import type { RunningOrigin } from '../../../origin/server'
import { startFakeGmail } from '../../support/fake-gmail'
import { fileTestbed } from '../../support/for-file'
import { eventFixture, signedPost, startOriginInProcess } from '../../support/origin'

const bed = fileTestbed()
let databaseName: string

beforeAll(async () => {
  databaseName = new URL(bed.databaseUrl).pathname.slice(1)
})

/** Backends of the test database (other than `except`) waiting for a lock right now. */
async function lockWaiters(except: number): Promise<number> {
  const { rows } = await bed.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> $2`,
    [databaseName, except],
  )
  return rows[0]?.n ?? 0
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not so within ${timeoutMs} ms: ${check}`)
    await sleep(50)
  }
}

function waitForLockWaiter(except: number): Promise<void> {
  return waitFor(async () => (await lockWaiters(except)) > 0, 15_000)
}

/**
 * A separate session holding `FOR UPDATE` on one row until released: every origin statement that
 * needs that row (the customer upsert, an edit's UPDATE) waits in Postgres.
 */
async function holdRowLock(sql: string, values: unknown[]) {
  const client = new pg.Client({ connectionString: bed.databaseUrl })
  await client.connect()
  await client.query('BEGIN')
  const locked = await client.query(sql, values)
  if (locked.rowCount !== 1) throw new Error(`expected to lock one row, locked ${locked.rowCount}`)
  const pid = (client as unknown as { processID: number }).processID
  let released = false
  return {
    pid,
    async release() {
      if (released) return
      released = true
      await client.query('COMMIT')
      await client.end()
    },
  }
}

/** Locks the customer of `event`'s sender (created first by an event of its own). */
async function lockCustomerOf(origin: string, event: InboundEvent, secret: string) {
  const first = await eventFixture({ tenant: event.tenant, sender: event.sender })
  expect((await signedPost(origin, first, secret)).status).toBe(201)
  return holdRowLock(
    'SELECT id FROM customers WHERE channel = $1 AND tenant = $2 AND external_id = $3 FOR UPDATE',
    [event.channel, event.tenant, event.sender.externalId],
  )
}

function rowsOf(event: InboundEvent): Promise<number> {
  return bed.count('messages', 'channel = $1 AND channel_message_id = $2', [
    event.channel,
    event.messageKey,
  ])
}

async function eventFrom(sender: string): Promise<InboundEvent> {
  return eventFixture({ tenant: `T-${sender}`, sender: { externalId: sender } })
}

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = []
  const logger = createLogger({
    level: 'debug',
    write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
  })
  return { logger, lines }
}

describe('a database connection that drops inside a transaction', () => {
  let downstream: Server
  let downstreamUrl: string

  beforeAll(async () => {
    // The outbox relay runs in the same process, so its queries meet the fault too.
    downstream = createServer((_req, res) => res.writeHead(200).end())
    await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve))
    downstreamUrl = `http://127.0.0.1:${(downstream.address() as AddressInfo).port}/items`
  })

  afterAll(async () => {
    await new Promise<void>((resolve) => downstream.close(() => resolve()))
  })

  it('the origin process answers 503, lives on, and after the proxy is back the event is one row', async () => {
    let proxy = await startNeonWsProxy({ target: { host: '127.0.0.1', port: 5432 } })
    // The Gmail poller and the outbox relay run in the same process and meet the fault too.
    const mailbox = `support-${randomBytes(4).toString('hex')}@inbound.example`
    const gmail = await startFakeGmail({ mailbox })
    const origin = await startOrigin({
      env: {
        DATABASE_URL: bed.databaseUrl,
        NEON_WS_PROXY: proxy.wsProxy,
        ORIGIN_SHARED_SECRET: bed.secret,
        LOG_LEVEL: 'warn',
        // Long enough that only the dropped connection can end the lock wait.
        DB_QUERY_TIMEOUT_MS: '20000',
        DOWNSTREAM_URL: downstreamUrl,
        OUTBOX_POLL_INTERVAL_MS: '20',
        ...gmail.env,
        GMAIL_POLL_INTERVAL_MS: '50',
      },
    })
    const event = await eventFrom('U-drop')
    const lock = await lockCustomerOf(origin.url, event, bed.secret)
    try {
      const pending = signedPost(origin.url, event, bed.secret)
      await waitForLockWaiter(lock.pid)
      // The Neon "compute" goes away while the transaction waits: every connection is cut.
      await proxy.close()

      const res = await pending
      expect(res.status).toBe(503)
      expect(await res.json()).toMatchObject({ error: { code: 'database_unavailable' } })
      const stillRunning = await Promise.race([
        origin.exited.then((exit) => `exited ${JSON.stringify(exit)}`),
        sleep(300).then(() => 'running'),
      ])
      expect(stillRunning, origin.output(20)).toBe('running')
      const health = await fetch(`${origin.url}/healthz`, { signal: AbortSignal.timeout(10_000) })
      expect(health.status).toBe(503)

      // Same port: the origin's NEON_WS_PROXY names it. The pool reconnects by itself.
      proxy = await startNeonWsProxy({
        target: { host: '127.0.0.1', port: 5432 },
        port: proxy.port,
      })
      await lock.release()
      // A new message is one statement (its own transaction): if Postgres has not noticed the
      // cut connection (client_connection_check_interval) by the time the lock goes, the
      // statement still commits, as a COMMIT sent before a cut would. Either way, one row: the
      // retry creates it, or answers it as the duplicate it is.
      const again = await signedPost(origin.url, event, bed.secret)
      expect([200, 201]).toContain(again.status)
      const answer = (await again.json()) as IngestResult
      expect(answer.outcome).toBe(again.status === 201 ? 'created' : 'duplicate')
      expect(await rowsOf(event)).toBe(1)
      expect(
        (await fetch(`${origin.url}/healthz`, { signal: AbortSignal.timeout(10_000) })).status,
      ).toBe(200)
      // The poller and the relay carried on: a new mail is stored and handed downstream.
      gmail.deliver(rawEmail({ to: mailbox }))
      const mailKey = `${mailbox}:%`
      await waitFor(
        async () =>
          (await bed.count(
            'messages m JOIN outbox o ON o.message_id = m.id',
            'm.channel_message_id LIKE $1 AND o.processed_at IS NOT NULL',
            [mailKey],
          )) === 1,
        20_000,
      )
      expect(origin.output(200)).not.toMatch(/uncaught|unhandled/i)
    } finally {
      await lock.release().catch(() => {})
      await origin.stop()
      await proxy.close()
      await gmail.close()
    }
  })
})

describe('every statement is bounded on the server', () => {
  it('a statement outside a transaction is cancelled by Postgres (57014) after DB_QUERY_TIMEOUT_MS', async () => {
    const db = createDatabase({
      databaseUrl: bed.databaseUrl,
      neonWsProxy: bed.wsProxy,
      poolMax: 2,
      connectTimeoutMs: 1000,
      queryTimeoutMs: 300,
      logger: silentLogger,
    })
    try {
      expect(await db.query<{ statement_timeout: string }>('SHOW statement_timeout')).toEqual([
        { statement_timeout: '300ms' },
      ])
      const error = await db.query('SELECT pg_sleep(3)').then(
        () => expect.unreachable('pg_sleep(3) finished under a 300 ms statement timeout'),
        (err: unknown) => err,
      )
      expect(error).toBeInstanceOf(DatabaseUnavailableError)
      expect((error as Error).cause).toMatchObject({ code: '57014' })
    } finally {
      await db.close()
    }
  })

  it("on Neon's pooled endpoint, where a session SET does not stick, the origin says what to do", async () => {
    const { logger, lines } = capturingLogger()
    const db = createDatabase({
      databaseUrl: 'postgres://app@ep-quiet-sky-123456-pooler.us-east-2.aws.neon.tech/inbound',
      poolMax: 1,
      connectTimeoutMs: 1000,
      queryTimeoutMs: 5000,
      logger,
    })
    await db.close()
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        hint: expect.stringContaining('ALTER ROLE <role> SET statement_timeout'),
      }),
    ])
  })

  it('an edit (no transaction) stuck behind a row lock: 503, and nothing keeps waiting in Postgres', async () => {
    const { logger, lines } = capturingLogger()
    const origin = await startOriginInProcess({
      databaseUrl: bed.databaseUrl,
      wsProxy: bed.wsProxy,
      secret: bed.secret,
      logger,
      config: { dbQueryTimeoutMs: 300 },
    })
    const original = await eventFrom('U-edit')
    expect((await signedPost(origin.url, original, bed.secret)).status).toBe(201)
    const lock = await holdRowLock(
      'SELECT id FROM messages WHERE channel = $1 AND channel_message_id = $2 FOR UPDATE',
      [original.channel, original.messageKey],
    )
    try {
      const edit = await eventFixture({
        ...original,
        kind: 'edit',
        body: 'edited while locked',
        occurredAt: new Date(Date.parse(original.occurredAt) + 1000).toISOString(),
        deliveryKey: `${original.deliveryKey}-edit`,
      })
      const res = await signedPost(origin.url, edit, bed.secret)
      expect(res.status).toBe(503)
      // The server cancelled it (not only the client giving up): its backend waits no longer.
      const cause = lines.find((l) => l.msg === 'database unavailable')
      expect(cause).toMatchObject({ code: '57014' })
      expect(await lockWaiters(lock.pid)).toBe(0)

      await lock.release()
      const retried = await signedPost(origin.url, edit, bed.secret)
      expect(retried.status).toBe(200)
      expect(await retried.json()).toMatchObject({ outcome: 'updated' })
    } finally {
      await lock.release()
      await origin.close()
    }
  })
})

describe('the pool wait is bounded below the Worker forward budget', () => {
  it('defaults to 1000 ms, and DB_CONNECT_TIMEOUT_MS at or above ORIGIN_TIMEOUT_MS is refused', () => {
    const base = { DATABASE_URL: 'postgres://u@db.example/x', ORIGIN_SHARED_SECRET: 's' }
    expect(loadConfig(base)).toMatchObject({ dbConnectTimeoutMs: 1000, originTimeoutMs: 2000 })
    // Unset, it follows a shorter forward budget.
    expect(loadConfig({ ...base, ORIGIN_TIMEOUT_MS: '800' })).toMatchObject({
      dbConnectTimeoutMs: 400,
    })
    expect(
      loadConfig({ ...base, DB_CONNECT_TIMEOUT_MS: '2500', ORIGIN_TIMEOUT_MS: '3000' }),
    ).toMatchObject({ dbConnectTimeoutMs: 2500 })
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({ ...base, ...env })
      } catch (err) {
        if (err instanceof ConfigError) return err.problems
        throw err
      }
      return []
    }
    expect(problems({ DB_CONNECT_TIMEOUT_MS: '2000' })).toEqual([
      'DB_CONNECT_TIMEOUT_MS (2000) must be below ORIGIN_TIMEOUT_MS (2000): the Worker gives up on a forward after ORIGIN_TIMEOUT_MS, so a longer wait for a connection only does work nobody waits for',
    ])
    expect(problems({ DB_CONNECT_TIMEOUT_MS: '1000', ORIGIN_TIMEOUT_MS: '800' })).toHaveLength(1)
  })

  it('with every connection busy, a request answers 503 within the forward budget', async () => {
    const origin = await startOriginInProcess({
      databaseUrl: bed.databaseUrl,
      wsProxy: bed.wsProxy,
      secret: bed.secret,
      config: { dbPoolMax: 1, dbQueryTimeoutMs: 20_000 },
    })
    const holder = await eventFrom('U-pool-holder')
    const lock = await lockCustomerOf(origin.url, holder, bed.secret)
    try {
      // The one connection waits inside a transaction for the lock.
      const holding = signedPost(origin.url, holder, bed.secret)
      await waitForLockWaiter(lock.pid)
      const started = performance.now()
      const res = await signedPost(origin.url, await eventFrom('U-pool-waiter'), bed.secret)
      const elapsedMs = performance.now() - started
      expect(res.status).toBe(503)
      expect(await res.json()).toMatchObject({ error: { code: 'database_unavailable' } })
      expect(elapsedMs).toBeLessThan(2000)

      await lock.release()
      expect((await holding).status).toBe(201)
    } finally {
      await lock.release()
      await origin.close()
    }
  })
})

describe('a request whose client has gone', () => {
  let origin: RunningOrigin

  beforeAll(async () => {
    origin = await startOriginInProcess({
      databaseUrl: bed.databaseUrl,
      wsProxy: bed.wsProxy,
      secret: bed.secret,
      // One connection: a request that kept it after its client left would starve the next one.
      config: { dbPoolMax: 1, dbQueryTimeoutMs: 20_000 },
    })
  })

  afterAll(async () => {
    await origin?.close()
  })

  /** Sends `event` signed and hangs up (as the Worker does at its forward timeout) after `when`. */
  async function hangUpWhen(event: InboundEvent, when: () => Promise<void>): Promise<void> {
    const body = JSON.stringify(event)
    const controller = new AbortController()
    const sent = fetch(`${origin.url}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(await signForward(bed.secret, body)) },
      body,
      signal: controller.signal,
    }).catch((err: unknown) => err)
    await when()
    controller.abort()
    expect(await sent).toMatchObject({ name: 'AbortError' })
  }

  it('while its transaction waits on a lock: rolled back at once, no row, the connection serves the next request', async () => {
    const event = await eventFrom('U-gone-tx')
    const lock = await lockCustomerOf(origin.url, event, bed.secret)
    try {
      await hangUpWhen(event, () => waitForLockWaiter(lock.pid))
      // The only connection must be free again well within the next request's pool wait.
      const next = await signedPost(origin.url, await eventFrom('U-gone-next'), bed.secret)
      expect(next.status).toBe(201)
      // Its backend notices the cut connection (client_connection_check_interval) and ends,
      // without waiting for the lock or its 20 s statement timeout.
      await waitFor(async () => (await lockWaiters(lock.pid)) === 0, 5_000)
      await lock.release()
      await sleep(200)
      expect(await rowsOf(event)).toBe(0)
      // The Worker's retry of the same event lands once.
      expect((await signedPost(origin.url, event, bed.secret)).status).toBe(201)
      expect(await rowsOf(event)).toBe(1)
    } finally {
      await lock.release()
    }
  })

  it('while it waits for a connection: it gives up and starts no transaction, no row', async () => {
    const holder = await eventFrom('U-gone-holder')
    const lock = await lockCustomerOf(origin.url, holder, bed.secret)
    try {
      const holding = signedPost(origin.url, holder, bed.secret)
      await waitForLockWaiter(lock.pid)
      const waiter = await eventFrom('U-gone-waiter')
      // Its request waits for the pool's one connection; the client leaves meanwhile.
      await hangUpWhen(waiter, () => sleep(150))
      await lock.release()
      expect((await holding).status).toBe(201)
      await sleep(300)
      expect(await rowsOf(waiter)).toBe(0)
      expect(await bed.count('customers', 'external_id = $1', ['U-gone-waiter'])).toBe(0)
    } finally {
      await lock.release()
    }
  })
})
