/**
 * The Idempotency-Key middleware on a route of the origin's: `POST /v1/failures/inbound/{id}/
 * replay`, against real Postgres (the `idempotency_keys` rows decide; no Redis is wired here). A
 * retried replay gets the first answer again, replayed, never "no longer dead"; the same key for
 * another failure is 422; concurrent replays with one key make one row and one answer.
 */
import { describe, expect, it } from 'vitest'
import { secretList } from '../../../shared/crypto'
import { fileTestbed } from '../../support/for-file'
import { eventFixture, signedPost, TEST_OPERATOR_TOKEN } from '../../support/origin'

const tb = fileTestbed()

/** A dead inbound event, as the Worker's dead-letter consumer reports one: its failure id. */
async function deadFailure(): Promise<{ id: string; messageKey: string }> {
  const event = await eventFixture()
  const report = {
    channel: event.channel,
    deliveryKey: event.deliveryKey,
    event,
    error: 'x',
    attempts: 5,
  }
  const answer = await signedPost(
    `${tb.origin.url}/v1/failures/inbound`,
    JSON.stringify(report),
    secretList(tb.secret)[0] as string,
  )
  const { failureId } = (await answer.json()) as { failureId: string }
  return { id: failureId, messageKey: event.messageKey }
}

function replay(id: string, key: string | null, token = TEST_OPERATOR_TOKEN): Promise<Response> {
  return fetch(`${tb.origin.url}/v1/failures/inbound/${id}/replay`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      ...(key === null ? {} : { 'idempotency-key': key }),
    },
  })
}

const rows = (messageKey: string) => tb.count('messages', 'channel_message_id = $1', [messageKey])

describe('POST /v1/failures/inbound/{id}/replay', () => {
  it('replays once; the same key again gets the same answer, replayed, and runs nothing', async () => {
    const failure = await deadFailure()
    const key = `"${crypto.randomUUID()}"`
    const first = await replay(failure.id, key)
    expect(first.status).toBe(200)
    const body = await first.json()
    expect(body).toMatchObject({ failureId: failure.id, replay: 'resolved', outcome: 'created' })
    const again = await replay(failure.id, key)
    expect(again.status).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await again.json()).toEqual(body)
    expect(await rows(failure.messageKey)).toBe(1)
    // Without the key's stored answer, the row is no longer dead: what a retry would have got.
    expect((await replay(failure.id, `"${crypto.randomUUID()}"`)).status).toBe(404)
  })

  it('is audited like a console replay: who, what, the result; once, not for its replayed answer', async () => {
    const failure = await deadFailure()
    const key = `"${crypto.randomUUID()}"`
    expect((await replay(failure.id, key)).status).toBe(200)
    expect((await replay(failure.id, key)).headers.get('idempotent-replayed')).toBe('true')
    const { rows: audited } = await tb.sql.query<{ actor: string; action: string; result: string }>(
      'SELECT actor, action, result FROM console_audit WHERE target = $1',
      [`failure ${failure.id}`],
    )
    expect(audited).toEqual([
      { actor: 'operator (HTTP API)', action: 'replay', result: expect.stringMatching(/^ok: /) },
    ])
  })

  it('without a key: 400, nothing replayed; a wrong token: 401', async () => {
    const failure = await deadFailure()
    const missing = await replay(failure.id, null)
    expect(missing.status).toBe(400)
    expect(missing.headers.get('content-type')).toBe('application/problem+json')
    expect((await replay(failure.id, '"k"', 'wrong')).status).toBe(401)
    expect(await rows(failure.messageKey)).toBe(0)
  })

  it('the same key for another failure: 422, that one not replayed', async () => {
    const [a, b] = [await deadFailure(), await deadFailure()]
    const key = `"${crypto.randomUUID()}"`
    expect((await replay(a.id, key)).status).toBe(200)
    expect((await replay(b.id, key)).status).toBe(422)
    expect(await rows(b.messageKey)).toBe(0)
  })

  it('10 at once with one key: one row', async () => {
    const failure = await deadFailure()
    const key = `"${crypto.randomUUID()}"`
    const answers = await Promise.all(Array.from({ length: 10 }, () => replay(failure.id, key)))
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(0)
    expect(await rows(failure.messageKey)).toBe(1)
    expect(await tb.count('idempotency_keys', "tenant = 'operator'")).toBeGreaterThan(0)
  })
})
