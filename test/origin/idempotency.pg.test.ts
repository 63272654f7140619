/**
 * The durable layer of Idempotency-Key at the origin (origin/idempotency.ts), against real
 * Postgres: an `api` event's answer is stored with its message, in one transaction; the same
 * request again gets it (replayed), another request under the key gets 422 and writes nothing;
 * concurrent copies with Redis out of the picture make one row and one answer; expired answers
 * are swept as new ones are stored, so the table holds about one retention's worth.
 */
import { createHash, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { InboundEvent } from '../../contract/event'
import { fileTestbed } from '../support/for-file'
import { eventFixture } from '../support/origin'

const tb = fileTestbed()
const sha = (text: string) => createHash('sha256').update(text).digest('hex')

function apiEvent(
  key: string,
  fingerprint = sha(`body of ${key}`),
  body = 'hello from a fixture',
): Promise<InboundEvent> {
  return eventFixture({
    body,
    channel: 'api',
    tenant: 'acme',
    deliveryKey: `api:acme:${key}`,
    messageKey: `acme:${key}`,
    idempotency: { route: 'POST /v1/messages', keyHash: sha(key), fingerprint, ttlSeconds: 86_400 },
  })
}

const fresh = () => `k-${randomBytes(6).toString('hex')}`

describe('an api event at the origin', () => {
  it('stores its answer with its message; the same request again is answered, nothing written', async () => {
    const key = fresh()
    const first = await tb.post(await apiEvent(key))
    expect(first.status).toBe(201)
    expect(first.body.answer).toMatchObject({
      status: 201,
      replayed: false,
      body: { id: first.body.messageId, status: 'created' },
    })
    const again = await tb.post(await apiEvent(key))
    expect(again.body.answer).toEqual({ ...first.body.answer, replayed: true })
    expect(await tb.count('messages', 'channel_message_id = $1', [`acme:${key}`])).toBe(1)
    expect(await tb.count('idempotency_keys', 'key_hash = $1', [sha(key)])).toBe(1)
  })

  it('another request under the key: 422 in the answer, nothing written', async () => {
    const key = fresh()
    await tb.post(await apiEvent(key))
    const other = await tb.post(await apiEvent(key, sha('another body')))
    expect(other.body.answer).toMatchObject({
      status: 422,
      body: { code: 'idempotency_key_reused' },
    })
    expect(await tb.count('messages', 'channel_message_id = $1', [`acme:${key}`])).toBe(1)
  })

  it('20 concurrent copies: one row, one stored answer, every answer the same body', async () => {
    const key = fresh()
    const event = await apiEvent(key)
    const answers = await Promise.all(Array.from({ length: 20 }, () => tb.post(event)))
    // The same bytes, key order included (the body is kept as json, not jsonb).
    const bodies = new Set(answers.map((a) => JSON.stringify(a.body.answer?.body)))
    expect(bodies.size).toBe(1)
    expect(answers.filter((a) => a.body.answer?.replayed === false)).toHaveLength(1)
    expect(await tb.count('messages', 'channel_message_id = $1', [`acme:${key}`])).toBe(1)
    expect(await tb.count('idempotency_keys', 'key_hash = $1', [sha(key)])).toBe(1)
  })

  it('past retention, the key again with another body: 422, the message and its text unchanged', async () => {
    const key = fresh()
    const first = await tb.post(await apiEvent(key))
    const expire = () =>
      tb.sql.query(
        `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key_hash = $1`,
        [sha(key)],
      )
    await expire()
    const other = await tb.post(await apiEvent(key, sha('another body'), 'another text'))
    expect(other.body.answer).toMatchObject({
      status: 422,
      body: { code: 'idempotency_key_reused' },
    })
    const { rows } = await tb.sql.query<{ body: string }>(
      'SELECT body FROM messages WHERE channel_message_id = $1',
      [`acme:${key}`],
    )
    expect(rows.map((r) => r.body)).toEqual(['hello from a fixture'])
    // The same request past retention is the same message: answered with its ids again.
    const same = await tb.post(await apiEvent(key))
    expect(same.body.answer).toMatchObject({
      status: 201,
      body: { id: first.body.messageId, status: 'created' },
    })
  })

  it('expired answers are swept as new ones are stored', async () => {
    await tb.sql.query(
      `INSERT INTO idempotency_keys (tenant, route, key_hash, fingerprint, status, body, expires_at)
       SELECT 'old', 'POST /v1/messages', md5(g::text), 'f', 201, '{}', now() - interval '1 hour'
         FROM generate_series(1, 5) g`,
    )
    await tb.post(await apiEvent(fresh()))
    expect(await tb.count('idempotency_keys', 'expires_at <= now()')).toBe(0)
  })
})
