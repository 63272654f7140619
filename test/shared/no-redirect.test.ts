/**
 * No outbound call follows a redirect (shared/no-redirect.ts): the outbox's hand-off
 * downstream, the Upstash port, Gmail's HTTP. Each is sent to a real local server that answers
 * every POST with a 302 to a page answering 200 with the shape that call would take for success;
 * followed, the 302 turns the POST into a GET that "succeeds". Each call must fail instead, and
 * the page must never be asked for. (The forward and the spool consumer:
 * test/gateway/origin-answers.workers.test.ts and test/spool/spool.e2e.test.ts.)
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { upstashPort } from '../../claims/platforms/upstash'
import { DEFAULT_RETRY, GmailHttpError, requestJson } from '../../origin/gmail/http'
import { handOff } from '../../origin/outbox/downstream'

let server: Server
let url = ''
let landed = 0

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume()
    if (req.url?.startsWith('/landing')) {
      landed++
      res.writeHead(200, { 'content-type': 'application/json' })
      return void res.end('{"result":"PONG","accepted":true}')
    }
    res.writeHead(302, { location: '/landing' })
    res.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

beforeEach(() => {
  landed = 0
})

describe('a 302 to a page answering 200 is a failure, never followed', () => {
  it('the outbox hand-off downstream', async () => {
    const row = { id: '1', messageId: '2', topic: 'message.created', payload: {}, createdAt: '' }
    const result = await handOff({ url: `${url}/hooks`, timeoutMs: 2_000 }, row)
    expect(result).toEqual({ ok: false, error: expect.stringContaining('302') })
    expect(landed).toBe(0)
  })

  it('the Upstash port', async () => {
    const port = upstashPort({ url, token: 'test-token' }, 2_000)
    await expect(port.ping()).rejects.toThrow(/302/)
    expect(landed).toBe(0)
  })

  it('Gmail', async () => {
    const call = requestJson(
      'history.list',
      async () => ({ url: `${url}/gmail/v1/users/me/history`, method: 'GET' }),
      { timeoutMs: 2_000, retry: { ...DEFAULT_RETRY, attempts: 1 } },
      64 * 1024,
    )
    await expect(call).rejects.toEqual(
      expect.objectContaining({ name: GmailHttpError.name, status: 302, reason: 'redirect' }),
    )
    expect(landed).toBe(0)
  })
})
