/**
 * The origin on a plain Postgres over TCP (node-postgres), no WebSocket proxy anywhere: the same
 * ingest and the same duplicate answer as through the Neon driver, and the driver chosen by
 * DATABASE_DRIVER or, unset, by the URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../../local/services'
import { loadConfig } from '../../../origin/config'
import { createDatabase } from '../../../origin/db'
import { silentLogger } from '../../../origin/log'
import type { RunningOrigin } from '../../../origin/server'
import { eventFixture, signedPost, startOriginInProcess } from '../../support/origin'

let database: TestDatabase
let origin: RunningOrigin
const secret = 'pg-driver-test-secret-0123456789abcdef'

beforeAll(async () => {
  database = await createTestDatabase()
  // No NEON_WS_PROXY: the Neon driver would go to wss://127.0.0.1 and never connect.
  origin = await startOriginInProcess({
    databaseUrl: database.url,
    secret,
    env: { DATABASE_DRIVER: 'pg' },
  })
})

afterAll(async () => {
  await origin?.close()
  await database?.drop()
})

describe('DATABASE_DRIVER=pg', () => {
  it('ingests over TCP and answers a replay as a duplicate', async () => {
    const event = await eventFixture()
    const first = await signedPost(origin.url, event, secret)
    const again = await signedPost(origin.url, event, secret)
    expect(first.status).toBe(201)
    expect(again.status).toBe(200)
    expect(((await again.json()) as { duplicate: boolean }).duplicate).toBe(true)
  })

  it('maps a unique violation and a data exception as the Neon driver does', async () => {
    const db = createDatabase({
      databaseUrl: database.url,
      driver: 'pg',
      poolMax: 2,
      connectTimeoutMs: 1000,
      queryTimeoutMs: 2000,
      logger: silentLogger,
    })
    try {
      const raw = await db.query('SELECT 1').then(
        () => undefined,
        (err: unknown) => err,
      )
      expect(raw).toBeUndefined()
      const unique = await db
        .transaction(async (tx) => {
          await tx.query('CREATE TEMP TABLE t (k int PRIMARY KEY)')
          await tx.query('INSERT INTO t VALUES (1)')
          await tx.query('INSERT INTO t VALUES (1)')
        })
        .catch((err: unknown) => err)
      expect((unique as { code?: string }).code).toBe('23505')
      const invalid = await db.query("SELECT 'x'::int").catch((err: unknown) => err)
      expect((invalid as { code?: string }).code).toBe('invalid_event')
    } finally {
      await db.close()
    }
  })

  it('is read from the URL when DATABASE_DRIVER is unset', () => {
    const base = { ORIGIN_SHARED_SECRET: secret }
    const driverOf = (env: Record<string, string>) => loadConfig({ ...base, ...env }).databaseDriver
    expect(driverOf({ DATABASE_URL: 'postgres://u@db.internal:5432/app' })).toBe('pg')
    expect(driverOf({ DATABASE_URL: 'postgres://u@ep-x-1.eu-central-1.aws.neon.tech/app' })).toBe(
      'neon',
    )
    expect(
      driverOf({ DATABASE_URL: 'postgres://u@127.0.0.1/app', NEON_WS_PROXY: '127.0.0.1:4444/v2' }),
    ).toBe('neon')
    expect(
      driverOf({ DATABASE_URL: 'postgres://u@db.internal/app', DATABASE_DRIVER: 'neon' }),
    ).toBe('neon')
    expect(() =>
      loadConfig({ ...base, DATABASE_URL: 'postgres://u@h/a', DATABASE_DRIVER: 'mysql' }),
    ).toThrow(/DATABASE_DRIVER must be neon or pg/)
  })
})
