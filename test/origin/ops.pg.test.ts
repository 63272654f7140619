/**
 * Operating the origin: /healthz and /metrics, the one log line per decision, start-up config
 * errors, and a database that is gone (503, retryable, and no crash) and comes back.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { startNeonWsProxy } from '../../local/neon-ws-proxy'
import { startOrigin } from '../../local/origin-process'
import { loadConfig } from '../../origin/config'
import { createLogger } from '../../origin/log'
import { fileTestbed } from '../support/for-file'
import {
  eventFixture,
  fetchMetrics,
  signedPost,
  startOriginInProcess,
  TEST_DATABASE_DRIVER,
  TEST_OPERATOR_TOKEN,
} from '../support/origin'

const bed = fileTestbed()

async function getJson(url: string) {
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('health and metrics', () => {
  it('/healthz answers 200 {ok:true} when the database answers', async () => {
    expect(await getJson(`${bed.origin.url}/healthz`)).toEqual({ status: 200, body: { ok: true } })
  })

  it('/metrics counts decisions by channel and outcome, in Prometheus text', async () => {
    const event = await eventFixture({ channel: 'sms', tenant: 'AC1', messageKey: 'AC1:SMmetrics' })
    expect((await bed.post(event)).status).toBe(201)
    expect((await bed.post(event)).status).toBe(200)
    expect((await signedPost(bed.origin.url, event, 'wrong-secret')).status).toBe(401)

    const res = await fetchMetrics(bed.origin.url)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
    const text = await res.text()
    for (const line of [
      'inbound_events_total{channel="sms",outcome="created"} 1',
      'inbound_events_total{channel="sms",outcome="duplicate"} 1',
      'inbound_events_total{channel="sms",outcome="updated"} 0',
      'inbound_db_duplicates_total{channel="sms"} 1',
      'inbound_payload_mismatch_total{channel="sms"} 0',
      'inbound_ingest_seconds_count{channel="sms"} 2',
      'inbound_rejected_total{code="unauthorized"} 1',
    ]) {
      expect(text).toContain(line)
    }
    expect(text).toMatch(/^# TYPE inbound_ingest_seconds histogram$/m)
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m)
  })

  it("/metrics is the operator's: 401 without the token or with a wrong one, nothing shown", async () => {
    for (const headers of [{}, { authorization: 'Bearer not-the-token' }] as Record<
      string,
      string
    >[]) {
      const res = await fetch(`${bed.origin.url}/metrics`, { headers })
      expect(res.status).toBe(401)
      const text = await res.text()
      expect(text).not.toContain('inbound_')
      expect(text).not.toContain(TEST_OPERATOR_TOKEN)
    }
    expect((await fetchMetrics(bed.origin.url)).status).toBe(200)
  })

  it('/metrics does not exist without an OPERATOR_TOKEN: 404', async () => {
    const origin = await startOriginInProcess({
      databaseUrl: bed.databaseUrl,
      wsProxy: bed.wsProxy,
      secret: 'any',
      config: { operatorToken: undefined },
    })
    try {
      expect((await fetch(`${origin.url}/metrics`)).status).toBe(404)
      expect((await fetchMetrics(origin.url)).status).toBe(404)
    } finally {
      await origin.close()
    }
  })

  it('an unknown route is a JSON 404', async () => {
    expect(await getJson(`${bed.origin.url}/nope`)).toEqual({
      status: 404,
      body: { error: { code: 'not_found', message: 'no such route' } },
    })
  })
})

describe('logs', () => {
  it('one JSON line per decision, with keys and ids but never the body or a secret', async () => {
    const lines: string[] = []
    const secret = `log-secret-${randomBytes(8).toString('hex')}`
    const origin = await startOriginInProcess({
      databaseUrl: bed.databaseUrl,
      wsProxy: bed.wsProxy,
      secret,
      logger: createLogger({ level: 'debug', write: (line) => lines.push(line) }),
    })
    try {
      const body = `private text ${randomBytes(8).toString('hex')}`
      const event = await eventFixture({
        channel: 'telegram',
        tenant: '4242',
        messageKey: '4242:9:7',
        body,
      })
      const res = await signedPost(origin.url, event, secret)
      expect(res.status).toBe(201)
      const { messageId } = (await res.json()) as { messageId: string }

      const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
      const decisions = records.filter((r) => r.msg === 'decision')
      expect(decisions).toHaveLength(1)
      expect(decisions[0]).toMatchObject({
        level: 'info',
        component: 'origin',
        channel: 'telegram',
        kind: 'message',
        decision: 'created',
        decidedBy: 'postgres',
        deliveryKey: event.deliveryKey,
        messageKey: '4242:9:7',
        messageId,
      })
      expect(typeof decisions[0]?.ms).toBe('number')
      const all = lines.join('\n')
      expect(all).not.toContain(body)
      expect(all).not.toContain(secret)
    } finally {
      await origin.close()
    }
  })
})

describe('configuration', () => {
  it('loadConfig applies the documented defaults and splits the secret list', () => {
    expect(
      loadConfig({
        DATABASE_URL: 'postgres://u@db.example/x',
        ORIGIN_SHARED_SECRET: ' new , old ',
      }),
    ).toEqual({
      databaseUrl: 'postgres://u@db.example/x',
      databaseDriver: 'pg',
      neonWsProxy: undefined,
      port: 8788,
      host: '127.0.0.1',
      sharedSecrets: ['new', 'old'],
      dbPoolMax: 10,
      maxEventBytes: 256 * 1024,
      dbQueryTimeoutMs: 5000,
      dbConnectTimeoutMs: 1000,
      originTimeoutMs: 2000,
      logLevel: 'info',
      gatewayUrl: null,
    })
  })

  it('a process with a bad configuration exits 2, names every problem, echoes no secret', async () => {
    const secret = `cfg-secret-${randomBytes(8).toString('hex')}`
    const started = startOrigin({
      env: {
        DATABASE_URL: `mysql://root:${secret}@127.0.0.1/x`,
        ORIGIN_SHARED_SECRET: secret,
        DB_POOL_MAX: 'lots',
        NEON_WS_PROXY: 'ws://127.0.0.1:1/v2',
      },
      // What the origin prints itself: the secret must not be in it.
      showSecrets: true,
    })
    const error = await started.then(
      () => expect.unreachable('the origin started with a bad configuration'),
      (err: Error) => err,
    )
    expect(error.message).toMatch(/exited \(code 2\) before it was ready/)
    expect(error.message).toContain('DATABASE_URL is not a postgres://')
    expect(error.message).toContain('DB_POOL_MAX must be an integer')
    expect(error.message).toContain('NEON_WS_PROXY is host:port/path without a scheme')
    expect(error.message).not.toContain(secret)
  })

  it('MAX_EVENT_BYTES below the largest event and its dead letter: no start, the reason given', async () => {
    const error = await startOrigin({
      env: { DATABASE_URL: bed.databaseUrl, ORIGIN_SHARED_SECRET: 's', MAX_EVENT_BYTES: '100000' },
    }).then(
      () => expect.unreachable('the origin started with MAX_EVENT_BYTES under its floor'),
      (err: Error) => err,
    )
    expect(error.message).toMatch(/exited \(code 2\) before it was ready/)
    expect(error.message).toContain(
      'MAX_EVENT_BYTES (100000) is below 262144: the largest event the Worker accepts (245760 bytes as JSON)',
    )
    const env = { DATABASE_URL: bed.databaseUrl, ORIGIN_SHARED_SECRET: 's' }
    expect(loadConfig({ ...env, MAX_EVENT_BYTES: '262144' }).maxEventBytes).toBe(262_144)
  })

  it('a missing DATABASE_URL and ORIGIN_SHARED_SECRET are both reported', async () => {
    const error = await startOrigin({ env: { DATABASE_URL: '', ORIGIN_SHARED_SECRET: '' } }).then(
      () => expect.unreachable('the origin started without configuration'),
      (err: Error) => err,
    )
    expect(error.message).toContain('DATABASE_URL is not set')
    expect(error.message).toContain('ORIGIN_SHARED_SECRET is not set')
  })
})

describe('database unavailable', () => {
  it('a database that does not exist: 503 database_unavailable, nothing crashes', async () => {
    const url = new URL(bed.databaseUrl)
    url.pathname = `/inbound_dedup_missing_${randomBytes(4).toString('hex')}`
    const origin = await startOriginInProcess({
      databaseUrl: url.toString(),
      wsProxy: bed.wsProxy,
      secret: 'any',
    })
    try {
      const res = await signedPost(origin.url, await eventFixture(), 'any')
      expect(res.status).toBe(503)
      expect(await res.json()).toEqual({
        error: { code: 'database_unavailable', message: 'database unavailable, retry later' },
      })
      const health = await getJson(`${origin.url}/healthz`)
      expect(health.status).toBe(503)
      expect(health.body).toMatchObject({ ok: false, error: { code: 'database_unavailable' } })
      expect((await fetchMetrics(origin.url)).status).toBe(200)
    } finally {
      await origin.close()
    }
  })

  it('a statement stuck behind a lock is cancelled by the timeout: 503, then 201 once free', async () => {
    const origin = await startOriginInProcess({
      databaseUrl: bed.databaseUrl,
      wsProxy: bed.wsProxy,
      secret: 'any',
      config: { dbQueryTimeoutMs: 300 },
    })
    // Another session is creating the same customer and has not committed: the origin's upsert
    // must wait for it, and nothing but the statement timeout ends that wait.
    const blocker = new pg.Client({ connectionString: bed.databaseUrl })
    await blocker.connect()
    try {
      const event = await eventFixture({ tenant: 'T-lock', sender: { externalId: 'U-lock' } })
      await blocker.query('BEGIN')
      await blocker.query(
        "INSERT INTO customers (channel, tenant, external_id) VALUES ('slack', 'T-lock', 'U-lock')",
      )
      const blocked = await signedPost(origin.url, event, 'any')
      expect(blocked.status).toBe(503)
      expect(await bed.count('messages', 'channel_message_id = $1', [event.messageKey])).toBe(0)

      await blocker.query('ROLLBACK')
      expect((await signedPost(origin.url, event, 'any')).status).toBe(201)
    } finally {
      await blocker.end()
      await origin.close()
    }
  })

  // The Neon driver's transport; on node-postgres the proxy is not on the path.
  it.skipIf(TEST_DATABASE_DRIVER === 'pg')(
    'the proxy goes away: 503 while it is gone, 2xx again once it is back',
    async () => {
      let proxy = await startNeonWsProxy({ target: { host: '127.0.0.1', port: 5432 } })
      const origin = await startOriginInProcess({
        databaseUrl: bed.databaseUrl,
        wsProxy: proxy.wsProxy,
        secret: 'any',
      })
      try {
        expect((await signedPost(origin.url, await eventFixture(), 'any')).status).toBe(201)

        await proxy.close()
        const event = await eventFixture()
        const down = await signedPost(origin.url, event, 'any')
        expect(down.status).toBe(503)
        expect((await getJson(`${origin.url}/healthz`)).status).toBe(503)
        expect(await bed.count('messages', 'channel_message_id = $1', [event.messageKey])).toBe(0)

        // Same port again (the origin's config names it); the pool reconnects by itself.
        proxy = await startNeonWsProxy({
          target: { host: '127.0.0.1', port: 5432 },
          port: proxy.port,
        })
        expect((await signedPost(origin.url, event, 'any')).status).toBe(201)
        expect((await getJson(`${origin.url}/healthz`)).status).toBe(200)
      } finally {
        await origin.close()
        await proxy.close()
      }
    },
  )
})
