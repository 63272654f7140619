/**
 * The origin down (an ORIGIN_URL nothing listens on): the registry is not on the webhook's path.
 * A connection route is verified from the record in KV alone, answered as the vendor's "ok" and
 * its event queued on the spool (naming the connection that verified it); a wrong secret is still
 * 401 and queues nothing. Every webhook channel, through the real Worker in workerd.
 */
import { describe, expect, it } from 'vitest'
import type { SpoolMessage } from '../../worker/spool/message'
import { RecordingQueue } from '../support/workerd/queues'
import { CASES, CASES_ENV } from './support/cases'
import { edgeHarness, putConnection, routeOf } from './support/edge'

/** Nothing listens on the discard port: every call to the origin fails to connect. */
const UNREACHABLE_ORIGIN = 'http://127.0.0.1:9'

describe.each(CASES)('$channel, by route id, with the origin unreachable', (c) => {
  it('verified from KV: answered ok and spooled; a wrong secret is 401 and queues nothing', async () => {
    const spool = new RecordingQueue<SpoolMessage>()
    const h = edgeHarness({
      ...CASES_ENV,
      ORIGIN_URL: UNREACHABLE_ORIGIN,
      SPOOL: spool as never,
      SPOOL_DEAD: new RecordingQueue() as never,
    })
    const tenant = c.tenant()
    const secret = c.secret()
    const record = await putConnection({
      channel: c.channel,
      account: tenant.account,
      ids: tenant.ids,
      secrets: [{ field: c.field, value: secret }],
    })
    const url = routeOf(c.channel, record.id)

    const wrong = await h.deliver(await c.request(url, tenant, c.secret()))
    expect(wrong.status).toBe(401)
    expect(spool.sent).toHaveLength(0)

    const response = await h.deliver(await c.request(url, tenant, secret))
    expect(response.status).toBe(200)
    expect(spool.sent).toHaveLength(1)
    const [message] = spool.sent as [SpoolMessage]
    expect(message.event?.connection).toEqual({ id: record.id, version: record.version })
  })
})
