/**
 * Messenger and Instagram through the real Worker routes, inside workerd, with real Redis (the
 * Upstash stand-in), the test origin, and bodies signed the way Meta signs them: the handshake,
 * signatures and other apps' accounts (nothing written), batches (replayed, partly stored,
 * concurrent copies, standby copies), edits and deletes before and after their message, reads and
 * reactions recorded, the largest body.
 */
import { describe, expect, it } from 'vitest'
import {
  META_PAGE,
  META_TEST_SECRET,
  META_VERIFY_TOKEN,
  messagingBody,
  messagingEvent,
  messagingText,
  metaMid,
  metaRequest,
} from '../../../local/vendor-deliveries'
import { META_MAX_BODY_BYTES } from '../../../worker/channels/meta-webhook'
import type { Env } from '../../../worker/env'
import { DONE_VALUE } from '../../support/claim-values'
import { GATEWAY, type Harness, harness } from '../../support/workerd/harness'
import { nothingWritten } from '../support/workerd'

const CHANNELS = [
  { name: 'messenger', object: 'page', env: 'MESSENGER', ids: 'MESSENGER_PAGES_BY_APP' },
  { name: 'instagram', object: 'instagram', env: 'INSTAGRAM', ids: 'INSTAGRAM_ACCOUNTS_BY_APP' },
] as const

describe.each(CHANNELS)('$name', ({ name, object, env, ids }) => {
  const url = `${GATEWAY}/webhooks/${name}`
  const vars = {
    [`${env}_APP_SECRET`]: META_TEST_SECRET,
    [`${env}_VERIFY_TOKEN`]: META_VERIFY_TOKEN,
  } as Partial<Env>
  const post = async (h: Harness, body: Record<string, unknown> | string, secret?: string) =>
    h.deliver(await metaRequest(url, body, secret ?? META_TEST_SECRET))
  const body = (...messaging: unknown[]) => messagingBody(object, [{ messaging }])

  /** Three messages of two accounts, as one POST. */
  function three() {
    const mids = [metaMid(), metaMid(), metaMid()] as const
    const post = messagingBody(object, [
      { id: META_PAGE, messaging: [messagingText(mids[0], 'one'), messagingText(mids[1], 'two')] },
      { id: '2002', messaging: [messagingText(mids[2], 'three', { recipient: '2002' })] },
    ])
    const scopes = [META_PAGE, META_PAGE, '2002']
    const keys = mids.map((mid, i) => `dedup:${name}:${scopes[i]}:${mid}`)
    return { body: post, keys, mids }
  }

  it('the GET handshake: the challenge for the verify token, else 403', async () => {
    const h = harness(vars)
    const get = (query: string) => h.deliver(new Request(`${url}?${query}`))
    const ok = await get(
      `hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=${META_VERIFY_TOKEN}`,
    )
    expect([ok.status, await ok.text()]).toEqual([200, '1158201444'])
    const wrong = await get('hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=wrong')
    expect(wrong.status).toBe(403)
  })

  it('a bad, missing or tampered X-Hub-Signature-256 is 401 and writes nothing', async () => {
    const h = harness(vars)
    const { body: batch } = three()
    expect((await post(h, batch, 'not-the-app-secret')).status).toBe(401)
    expect(
      (await h.deliver(new Request(url, { method: 'POST', body: JSON.stringify(batch) }))).status,
    ).toBe(401)
    const good = await metaRequest(url, batch, META_TEST_SECRET)
    const tampered = new Request(url, {
      method: 'POST',
      headers: good.headers,
      body: (await good.text()).replace('one', 'uno'),
    })
    expect((await h.deliver(tampered)).status).toBe(401)
    await nothingWritten(h)
  })

  it("several apps: each app's secret writes only for its own accounts; another's: 401, nothing written", async () => {
    const h = harness({
      [`${env}_APP_SECRETS_BY_APP`]: '111=app-one|app-one-old,222=app-two',
      [`${env}_VERIFY_TOKEN`]: META_VERIFY_TOKEN,
      [ids]: `111=${META_PAGE},222=2002`,
    } as Partial<Env>)
    const mine = body(messagingText(metaMid(), 'mine'))
    const { body: mixed } = three()
    expect((await post(h, mixed, 'app-one')).status).toBe(401)
    expect((await post(h, mine, 'app-two')).status).toBe(401)
    await nothingWritten(h)
    expect((await post(h, mine, 'app-one-old')).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('3 messages on 2 accounts, replayed: 3 rows, the replay answered from Redis, kept 48 h', async () => {
    const h = harness(vars)
    const { body: batch, keys } = three()
    expect((await post(h, batch)).status).toBe(200)
    expect((await post(h, batch)).status).toBe(200)
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(3)
    expect(calls.map((c) => c.deliveryKey).sort()).toEqual([...keys].sort())
    for (const key of keys) {
      expect(await h.redisGet(key)).toMatch(DONE_VALUE)
      expect(await h.redisTtl(key)).toBeGreaterThan(36 * 3_600)
    }
  })

  it('a batch where one message is already stored adds only the others', async () => {
    const h = harness(vars)
    const { body: batch, mids } = three()
    expect((await post(h, body(messagingText(mids[0], 'one')))).status).toBe(200)
    expect((await post(h, batch)).status).toBe(200)
    const { calls, rows } = await h.originCalls()
    expect([calls.length, rows]).toEqual([3, 3])
  })

  it('20 concurrent copies of a two-message batch leave two rows', async () => {
    const h = harness(vars)
    const batch = body(messagingText(metaMid(), 'a'), messagingText(metaMid(), 'b'))
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () => (await post(h, batch)).status),
    )
    expect(answers.every((s) => s === 200 || s === 503)).toBe(true)
    expect((await post(h, batch)).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(2)
  })

  it('the handover: a standby copy of a message is no second row', async () => {
    const h = harness(vars)
    const mid = metaMid()
    const both = messagingBody(object, [
      { messaging: [messagingText(mid, 'hi')] },
      { standby: [messagingText(mid, 'hi')] },
    ])
    expect((await post(h, both)).status).toBe(200)
    expect(
      (await post(h, messagingBody(object, [{ standby: [messagingText(mid, 'hi')] }]))).status,
    ).toBe(200)
    const { calls, rows } = await h.originCalls()
    expect([calls.length, rows]).toEqual([1, 1])
  })

  it('an edit, before and after its message: forwarded under the message key', async () => {
    const h = harness(vars)
    const [before, after] = [metaMid(), metaMid()]
    const edit = (mid: string) =>
      messagingEvent({ message_edit: { mid, text: 'edited', num_edit: 1 } })
    expect((await post(h, body(edit(before), messagingText(before, 'original')))).status).toBe(200)
    expect((await post(h, body(messagingText(after, 'original'), edit(after)))).status).toBe(200)
    const { calls } = await h.originCalls()
    const edits = calls.filter((c) => c.kind === 'edit').map((c) => c.messageKey)
    expect(edits.sort()).toEqual([before, after].map((mid) => `${META_PAGE}:${mid}`).sort())
  })

  it('reads, deliveries and reactions: recorded in their own namespace, never forwarded', async () => {
    const h = harness(vars)
    const mid = metaMid()
    const statuses = body(
      messagingEvent({ read: { watermark: 1458668856253 } }),
      messagingEvent({ delivery: { mids: [mid], watermark: 1458668856253 } }),
      messagingEvent({ reaction: { mid, action: 'react', reaction: 'love' } }),
    )
    expect((await post(h, statuses)).status).toBe(200)
    expect((await post(h, statuses)).status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(0)
    const keys = await h.redis.exec<string[]>(['KEYS', `${h.redisKey(`dedup:${name}-status:`)}*`])
    expect(keys).toHaveLength(3)
    // A message with the mid the reaction names is not swallowed by it.
    expect((await post(h, body(messagingText(mid, 'hello')))).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it("the largest body, Meta's 3 MB, is taken; a byte more is 413", async () => {
    const h = harness(vars)
    const bodyOf = (bytes: number) => {
      const shell = JSON.stringify(body(messagingText(metaMid(), '')))
      return shell.replace('"text":""', `"text":"${'x'.repeat(bytes - shell.length)}"`)
    }
    expect((await post(h, bodyOf(META_MAX_BODY_BYTES))).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(1)
    expect((await post(h, bodyOf(META_MAX_BODY_BYTES + 1))).status).toBe(413)
  })
})

describe('instagram: is_deleted', () => {
  it('a delete before and after its message, under the message key', async () => {
    const h = harness({
      INSTAGRAM_APP_SECRET: META_TEST_SECRET,
      INSTAGRAM_VERIFY_TOKEN: META_VERIFY_TOKEN,
    })
    const url = `${GATEWAY}/webhooks/instagram`
    const [before, after] = [metaMid(), metaMid()]
    const deleted = (mid: string) => messagingEvent({ message: { mid, is_deleted: true } })
    const batch = messagingBody('instagram', [
      {
        messaging: [
          deleted(before),
          messagingText(before, 'x'),
          messagingText(after, 'y'),
          deleted(after),
        ],
      },
    ])
    expect((await h.deliver(await metaRequest(url, batch, META_TEST_SECRET))).status).toBe(200)
    const { calls } = await h.originCalls()
    const deletes = calls.filter((c) => c.kind === 'delete').map((c) => c.messageKey)
    expect(deletes.sort()).toEqual([before, after].map((mid) => `${META_PAGE}:${mid}`).sort())
  })
})
