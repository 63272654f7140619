/**
 * One-time signature bindings at the origin (`POST /v1/signature-bindings`, table
 * `signature_bindings`), against real Postgres: the first body wins, the same body again is bound,
 * concurrent first uses agree on one winner, an expired binding is taken over, and only the
 * Worker's signature is heard. And an event carrying a pending binding (taken while no store could
 * bind it) is bound before it is stored: another body under that binding is refused, no row.
 */
import { describe, expect, it } from 'vitest'
import { secretList } from '../../shared/crypto'
import { fileTestbed } from '../support/for-file'
import { eventFixture, runFailuresCli, signedPost } from '../support/origin'

const tb = fileTestbed()
let n = 0
const freshKey = () => `wechat-signature:gh_0123456789ab:${Date.now()}.${process.pid}${n++}`

async function bind(body: unknown, secret = secretList(tb.secret)[0] as string) {
  const response = await signedPost(
    `${tb.origin.url}/v1/signature-bindings`,
    JSON.stringify(body),
    secret,
  )
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

describe('POST /v1/signature-bindings', () => {
  it('binds a key to its first hash: that hash again is bound, another is refused', async () => {
    const key = freshKey()
    expect(await bind({ key, hash: 'aaaaaaaaaaaaaaaa', ttlSeconds: 600 })).toEqual({
      status: 200,
      json: { binding: 'bound' },
    })
    expect((await bind({ key, hash: 'aaaaaaaaaaaaaaaa', ttlSeconds: 600 })).json).toEqual({
      binding: 'bound',
    })
    expect((await bind({ key, hash: 'bbbbbbbbbbbbbbbb', ttlSeconds: 600 })).json).toEqual({
      binding: 'other',
    })
    expect(await tb.count('signature_bindings', 'key = $1', [key])).toBe(1)
  })

  it('twenty concurrent first uses with four bodies: one body wins, its copies bound, the rest refused', async () => {
    const key = freshKey()
    const hashes = ['1111111111111111', '2222222222222222', '3333333333333333', '4444444444444444']
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const hash = hashes[i % 4] as string
        return bind({ key, hash, ttlSeconds: 600 }).then((a) => ({ hash, ...a }))
      }),
    )
    expect(answers.every((a) => a.status === 200)).toBe(true)
    const winners = new Set(answers.filter((a) => a.json.binding === 'bound').map((a) => a.hash))
    expect(winners.size).toBe(1)
    expect(answers.filter((a) => a.json.binding === 'bound')).toHaveLength(5)
    const { rows } = await tb.sql.query('SELECT body_hash FROM signature_bindings WHERE key = $1', [
      key,
    ])
    expect(rows).toEqual([{ body_hash: [...winners][0] }])
  })

  it('an expired binding is taken over by the next body, and swept expired rows go', async () => {
    const key = freshKey()
    const stale = freshKey()
    await tb.sql.query(
      `INSERT INTO signature_bindings (key, body_hash, expires_at)
       VALUES ($1, 'aaaaaaaaaaaaaaaa', now() - interval '1 second'),
              ($2, 'aaaaaaaaaaaaaaaa', now() - interval '1 hour')`,
      [key, stale],
    )
    expect((await bind({ key, hash: 'bbbbbbbbbbbbbbbb', ttlSeconds: 600 })).json).toEqual({
      binding: 'bound',
    })
    expect(await tb.count('signature_bindings', 'key = $1', [stale])).toBe(0)
  })

  it('refuses what is not a binding (400) and what the Worker did not sign (401); nothing kept', async () => {
    const key = freshKey()
    for (const body of [
      { key, hash: 'not hex', ttlSeconds: 600 },
      { key, hash: 'aaaaaaaaaaaaaaaa', ttlSeconds: 0 },
      { key: 'k'.repeat(300), hash: 'aaaaaaaaaaaaaaaa', ttlSeconds: 600 },
      { key, hash: 'aaaaaaaaaaaaaaaa' },
    ]) {
      expect((await bind(body)).status).toBe(400)
    }
    expect((await bind({ key, hash: 'aaaaaaaaaaaaaaaa', ttlSeconds: 600 }, 'wrong')).status).toBe(
      401,
    )
    expect(await tb.count('signature_bindings', 'key = $1', [key])).toBe(0)
  })
})

describe('an event carrying a pending binding (POST /v1/events, /v1/events/batch)', () => {
  const wechatEvent = (binding: { key: string; hash: string }, body: string) =>
    eventFixture({
      channel: 'wechat',
      tenant: 'gh_0123456789ab',
      messageKey: `gh_0123456789ab:${Date.now()}${n++}`,
      body,
      signatureBinding: { ...binding, ttlSeconds: 600 },
    })
  const post = (path: string, body: unknown) =>
    signedPost(`${tb.origin.url}${path}`, JSON.stringify(body), secretList(tb.secret)[0] as string)

  it('the first body is stored and binds; the same binding with another body is 422 signature_reused, no row', async () => {
    const key = freshKey()
    const first = await wechatEvent({ key, hash: 'aaaaaaaaaaaaaaaa' }, 'hi')
    const forged = await wechatEvent({ key, hash: 'bbbbbbbbbbbbbbbb' }, 'pay me')
    expect((await post('/v1/events', first)).status).toBe(201)
    // The first again (a redelivery of it) is its duplicate, not a refusal.
    expect((await post('/v1/events', first)).status).toBe(200)
    const refused = await post('/v1/events', forged)
    expect(refused.status).toBe(422)
    expect(await refused.json()).toMatchObject({ error: { code: 'signature_reused' } })
    expect(await tb.count('messages', 'channel_message_id = $1', [forged.messageKey])).toBe(0)
    expect(await tb.count('messages', 'channel_message_id = $1', [first.messageKey])).toBe(1)
  })

  it('in a batch, the item under a binding held by another body is refused alone', async () => {
    const key = freshKey()
    await bind({ key, hash: 'aaaaaaaaaaaaaaaa', ttlSeconds: 600 })
    const forged = await wechatEvent({ key, hash: 'bbbbbbbbbbbbbbbb' }, 'pay me')
    const own = await wechatEvent({ key, hash: 'aaaaaaaaaaaaaaaa' }, 'hi')
    const plain = await eventFixture()
    const response = await post('/v1/events/batch', { events: [forged, own, plain] })
    expect(response.status).toBe(200)
    const { results } = (await response.json()) as {
      results: { status: number; error?: { code: string } }[]
    }
    expect(results.map((r) => r.status)).toEqual([422, 201, 201])
    expect(results[0]?.error?.code).toBe('signature_reused')
    expect(await tb.count('messages', 'channel_message_id = $1', [forged.messageKey])).toBe(0)
  })
  it("an operator's replay of a dead event under a binding another body holds is refused too: no row", async () => {
    const key = freshKey()
    await bind({ key, hash: 'aaaaaaaaaaaaaaaa', ttlSeconds: 600 })
    const forged = await wechatEvent({ key, hash: 'bbbbbbbbbbbbbbbb' }, 'pay me')
    const report = {
      channel: forged.channel,
      deliveryKey: forged.deliveryKey,
      event: forged,
      error: 'origin 503 after 5 attempts',
      attempts: 5,
    }
    const recorded = await post('/v1/failures/inbound', report)
    expect(recorded.status).toBe(201)
    const { failureId } = (await recorded.json()) as { failureId: string }
    const replay = await runFailuresCli(tb, ['replay', failureId], { DOWNSTREAM_URL: '' })
    expect(replay.code).not.toBe(0)
    expect(await tb.count('messages', 'channel_message_id = $1', [forged.messageKey])).toBe(0)
  })
})
