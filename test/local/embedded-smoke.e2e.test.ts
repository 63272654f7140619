/**
 * The embedded mode (what `npm run dev` runs without DATABASE_URL and REDIS_URL): PGlite behind
 * the Neon proxy, the embedded Upstash store, a real origin process, and the built Worker in
 * Miniflare. One logical message delivered twice is one row, seen through the origin's answers,
 * through the Worker, and in the database itself.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Pool } from '@neondatabase/serverless'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  finalizeEvent,
  type InboundEvent,
  type InboundEventDraft,
  type IngestResult,
} from '../../contract/event'
import { configureNeonForLocalProxy } from '../../local/neon-local'
import { type Stack, startStack } from '../../local/stack'
import { telegramDelivery, vendorBindings } from '../../local/vendor-deliveries'
import { signedPost } from '../support/origin'
import { send } from '../support/test-stack'

let dataDir: string
let stack: Stack
let pool: Pool

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'inbound-dedup-smoke-'))
  stack = await startStack({
    postgres: 'embedded',
    pgliteDir: dataDir,
    redis: 'embedded',
    originEnv: { LOG_LEVEL: 'warn' },
    worker: { vars: vendorBindings() },
  })
  // Through the Neon proxy, as the origin reads it.
  configureNeonForLocalProxy(stack.database.neonWsProxy)
  pool = new Pool({ connectionString: stack.database.databaseUrl, max: 2 })
}, 240_000)

afterAll(async () => {
  await pool?.end()
  await stack?.stop()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
})

async function postEvent(event: InboundEvent): Promise<{ status: number; body: IngestResult }> {
  const res = await signedPost(stack.origin.url, event, stack.originSecret)
  return { status: res.status, body: (await res.json()) as IngestResult }
}

function draft(messageKey: string, text: string, kind: InboundEventDraft['kind'] = 'message') {
  return {
    kind,
    channel: 'sms',
    tenant: 'AC-smoke',
    deliveryKey: `dedup:sms:AC-smoke:${messageKey}:${kind}`,
    messageKey: `AC-smoke:${messageKey}`,
    sender: { externalId: '+15550100' },
    body: text,
    occurredAt: new Date('2026-11-30T10:00:00Z').toISOString(),
  } satisfies InboundEventDraft
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(sql, params)
  return rows[0]?.n ?? -1
}

describe('embedded mode: PGlite + embedded store + origin process', () => {
  it('a message delivered twice is one row; a second message joins the pending conversation', async () => {
    const first = await finalizeEvent(draft('SM1', 'hello'))
    const created = await postEvent(first)
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ outcome: 'created', duplicate: false })
    expect(created.body.messageId).toBeTruthy()

    const { messageId, conversationId } = created.body
    expect(await postEvent(first)).toMatchObject({
      status: 200,
      body: { outcome: 'duplicate', duplicate: true, messageId, conversationId },
    })

    const second = await postEvent(await finalizeEvent(draft('SM2', 'second')))
    expect(second.status).toBe(201)
    expect(second.body.conversationId).toBe(created.body.conversationId)
    expect(second.body.messageId).not.toBe(created.body.messageId)

    expect(
      await count('SELECT count(*)::int AS n FROM messages WHERE channel_message_id = $1', [
        'AC-smoke:SM1',
      ]),
    ).toBe(1)
    expect(
      await count(
        'SELECT count(*)::int AS n FROM outbox o JOIN messages m ON m.id = o.message_id WHERE m.channel = $1',
        ['sms'],
      ),
    ).toBe(2)
  })

  it('concurrent deliveries of one message: one row, every answer names it', async () => {
    const event = await finalizeEvent(draft('SM-race', 'race'))
    const answers = await Promise.all(Array.from({ length: 10 }, () => postEvent(event)))
    const ids = new Set(answers.map((a) => a.body.messageId))
    expect(answers.every((a) => a.status === 200 || a.status === 201)).toBe(true)
    expect(answers.filter((a) => a.body.outcome === 'created')).toHaveLength(1)
    expect(ids.size).toBe(1)
    expect(
      await count('SELECT count(*)::int AS n FROM messages WHERE channel_message_id = $1', [
        'AC-smoke:SM-race',
      ]),
    ).toBe(1)
  })

  it('an edit updates the row and adds none', async () => {
    const edit = await finalizeEvent(draft('SM1', 'hello, edited', 'edit'))
    const res = await postEvent(edit)
    expect(res.status).toBe(200)
    expect(res.body.outcome).toBe('updated')
    const { rows } = await pool.query<{ body: string }>(
      'SELECT body FROM messages WHERE channel_message_id = $1',
      ['AC-smoke:SM1'],
    )
    expect(rows).toEqual([{ body: 'hello, edited' }])
  })

  it('an unsigned request writes nothing', async () => {
    const before = await count('SELECT count(*)::int AS n FROM messages')
    const res = await fetch(`${stack.origin.url}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(await finalizeEvent(draft('SM-unsigned', 'x'))),
    })
    expect(res.status).toBe(401)
    expect(await count('SELECT count(*)::int AS n FROM messages')).toBe(before)
  })

  it('through the Worker (Miniflare, built bundle): a Telegram update delivered twice is one row', async () => {
    const d = telegramDelivery({ text: 'via the worker' })
    expect(await send(await d.request(stack.worker.url))).toBe(200)
    expect(await send(await d.request(stack.worker.url))).toBe(200)
    expect(
      await count(
        "SELECT count(*)::int AS n FROM messages WHERE channel = 'telegram' AND body = $1",
        ['via the worker'],
      ),
    ).toBe(1)
    const forged = telegramDelivery({ text: 'via the worker', forged: true })
    expect(await send(await forged.request(stack.worker.url))).toBe(401)
  })
})
