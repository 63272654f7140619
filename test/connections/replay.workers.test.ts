/**
 * An unrecognized event a connection verified, kept and replayed later (the origin's replay of a
 * dead letter, POST /internal/unrecognized/replay): it carries its connection, and a replay
 * delivers it only while that connection is active (with the version KV holds now), also where
 * the channel has no variables at all; a disabled connection's stays a dead letter.
 */
import { describe, expect, it } from 'vitest'
import { signForward } from '../../contract/forward-signature'
import {
  keptBody,
  UNRECOGNIZED_KIND,
  UNRECOGNIZED_REPLAY_ROUTE,
} from '../../contract/unrecognized-event'
import {
  lineBody,
  lineEventId,
  lineMessageId,
  lineText,
  TEST_SECRETS,
} from '../../local/vendor-deliveries'
import { GATEWAY, type Harness } from '../support/workerd/harness'
import { edgeHarness, putConnection } from './support/edge'

const DESTINATION = 'U00000000000000000000000000c0ffee'

async function replay(h: Harness, event: unknown) {
  const body = JSON.stringify({ event })
  const headers = await signForward(TEST_SECRETS.origin, body, undefined, UNRECOGNIZED_REPLAY_ROUTE)
  const response = await h.deliver(
    new Request(`${GATEWAY}${UNRECOGNIZED_REPLAY_ROUTE.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    }),
  )
  const text = await response.text()
  return { status: response.status, answer: text ? JSON.parse(text) : null }
}

function kept(connection: { id: string; version: number } | undefined) {
  const edited = {
    ...lineText(lineMessageId(), 'hello, edited', { timestamp: 1_700_000_005_000 }),
    type: 'messageEdited',
  }
  return {
    v: 1,
    kind: UNRECOGNIZED_KIND,
    channel: 'line',
    deliveryKey: `dedup:unrecognized:line:${DESTINATION}:h${lineEventId()}`,
    reason: 'line_type_messageEdited',
    tenant: DESTINATION,
    ...(connection ? { connection } : {}),
    path: '/webhooks/line',
    contentType: 'application/json',
    ...keptBody(JSON.stringify(lineBody([edited], DESTINATION))),
    receivedAt: Date.now(),
  }
}

const putLine = (status: 'active' | 'disabled', version: number) =>
  putConnection({
    channel: 'line',
    account: DESTINATION,
    status,
    version,
    secrets: [{ field: 'channel_secret', value: 'line-secret' }],
  })

describe("the replay of a connection's unrecognized event", () => {
  it('delivers while the connection is active, naming the version KV holds now; no LINE variable needed', async () => {
    const h = edgeHarness()
    const record = await putLine('active', 3)
    const { answer } = await replay(h, kept({ id: record.id, version: 2 }))
    expect(answer).toEqual({ outcome: 'delivered', decisions: ['forwarded'] })
    const { calls } = await h.originCalls()
    expect(calls.map((call) => call.connection)).toEqual([{ id: record.id, version: 3 }])
    // The variables' own event still needs the channel configured.
    expect((await replay(h, kept(undefined))).status).toBe(503)
  })

  it('a disabled connection: it stays a dead letter, nothing delivered', async () => {
    const h = edgeHarness()
    const record = await putLine('disabled', 2)
    const { answer } = await replay(h, kept({ id: record.id, version: 1 }))
    expect(answer).toEqual({
      outcome: 'unrecognized',
      decisions: [],
      reason: 'connection_disabled',
    })
    expect((await h.originCalls()).calls).toHaveLength(0)
  })
})
