/**
 * The Upstash REST client's bounds against a real HTTP server that is not Upstash: a reply larger
 * than any of our commands' is refused, unread past the bound (an error like any other from Redis:
 * the claim store fails open on it), and a normal reply still reads.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { upstashPort } from '../../claims/platforms/upstash'
import { BodyOverLimitError } from '../../shared/body'

let server: Server
let url = ''
/** What the server answers next: this much padding around the result; its length declared or not. */
let padBytes = 0
let declared = true

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const body = JSON.stringify({ result: 'PONG', pad: 'x'.repeat(padBytes) })
      // Without a declared length Node sends it chunked.
      if (declared) res.setHeader('content-length', Buffer.byteLength(body))
      res.setHeader('content-type', 'application/json')
      res.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

it('reads a normal reply', async () => {
  padBytes = 0
  declared = true
  await expect(upstashPort({ url, token: 't' }, 2_000).ping()).resolves.toBeUndefined()
})

it.each([
  ['declared', true],
  ['chunked', false],
])('refuses a reply over its bound (%s)', async (_framing, declare) => {
  padBytes = 256 * 1024 // MAX_REPLY_BYTES is 64 KiB
  declared = declare
  await expect(upstashPort({ url, token: 't' }, 2_000).ping()).rejects.toBeInstanceOf(
    BodyOverLimitError,
  )
})
