/**
 * The REST KvPublisher against a local HTTP server that answers as Cloudflare's bulk endpoints
 * do: the token in the Authorization header, `unsuccessful_keys` sent again, a 429 waited out
 * by its Retry-After, a 5xx backed off, a server that does not answer cut by the timeout, and
 * errors that name counts and statuses, never the token or a value.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { KvWriteError, restPublisher } from '../../origin/connections/kv-rest'

type Answer = { status: number; body?: unknown; headers?: Record<string, string>; hang?: boolean }
const TOKEN = 'cf-kv-token-0123456789abcdef'
let server: Server
let baseUrl: string
let answers: Answer[]
let seen: { method: string; url: string; auth: string; body: unknown }[]

const success = (unsuccessful: string[] = [], count = 0): Answer => ({
  status: 200,
  body: {
    success: true,
    errors: [],
    messages: [],
    result: { successful_key_count: count, unsuccessful_keys: unsuccessful },
  },
})

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      auth: req.headers.authorization ?? '',
      body: await readJson(req),
    })
    const answer = answers.shift() ?? success()
    if (answer.hang) return
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
    res.end(
      JSON.stringify(answer.body ?? { success: false, errors: [{ code: 10000, message: 'x' }] }),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/client/v4`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})
beforeEach(() => {
  answers = []
  seen = []
})

function publisher(sleeps: number[], options = {}) {
  return restPublisher(
    { accountId: 'acct1', namespaceId: 'ns1', apiToken: TOKEN, baseUrl },
    { sleep: async (ms) => void sleeps.push(ms), ...options },
  )
}

describe('restPublisher', () => {
  it('PUTs the pairs in bulk with the token, and sends again only the unsuccessful keys', async () => {
    answers = [success(['conn:b']), success()]
    const sleeps: number[] = []
    await publisher(sleeps).put([
      { key: 'conn:a', value: 'A' },
      { key: 'conn:b', value: 'B' },
    ])
    expect(seen.map((s) => [s.method, s.url, s.auth])).toEqual([
      ['PUT', '/client/v4/accounts/acct1/storage/kv/namespaces/ns1/bulk', `Bearer ${TOKEN}`],
      ['PUT', '/client/v4/accounts/acct1/storage/kv/namespaces/ns1/bulk', `Bearer ${TOKEN}`],
    ])
    expect(seen[0]?.body).toEqual([
      { key: 'conn:a', value: 'A' },
      { key: 'conn:b', value: 'B' },
    ])
    expect(seen[1]?.body).toEqual([{ key: 'conn:b', value: 'B' }])
    expect(sleeps).toHaveLength(1)
  })

  it('splits a put by bytes as well as by count: no request body over its bound', async () => {
    const pairs = ['a', 'b', 'c'].map((k) => ({ key: `conn:${k}`, value: k.repeat(400) }))
    await publisher([], { maxBytes: 1000 }).put(pairs)
    expect(seen.map((s) => (s.body as unknown[]).length)).toEqual([2, 1])
    expect(seen.every((s) => Buffer.byteLength(JSON.stringify(s.body)) <= 1000)).toBe(true)
    expect(seen.flatMap((s) => s.body as unknown[])).toEqual(pairs)
  })

  it('waits out a 429 by its Retry-After, then writes', async () => {
    answers = [{ status: 429, headers: { 'retry-after': '3' } }, success()]
    const sleeps: number[] = []
    await publisher(sleeps).put([{ key: 'conn:a', value: 'A' }])
    expect(sleeps).toEqual([3000])
    expect(seen).toHaveLength(2)
  })

  it('backs off after a 5xx and an answer without success', async () => {
    answers = [{ status: 502 }, { status: 200, body: { success: false } }, success()]
    const sleeps: number[] = []
    await publisher(sleeps).put([{ key: 'conn:a', value: 'A' }])
    expect(seen).toHaveLength(3)
    expect(sleeps).toHaveLength(2)
    expect(sleeps.every((ms) => ms > 0)).toBe(true)
  })

  it('deletes through POST …/bulk/delete, retrying its unsuccessful keys', async () => {
    answers = [success(['idx:line:U1']), success()]
    await publisher([]).delete(['conn:x', 'idx:line:U1'])
    expect(seen.map((s) => [s.method, s.url])).toEqual([
      ['POST', '/client/v4/accounts/acct1/storage/kv/namespaces/ns1/bulk/delete'],
      ['POST', '/client/v4/accounts/acct1/storage/kv/namespaces/ns1/bulk/delete'],
    ])
    expect(seen[0]?.body).toEqual(['conn:x', 'idx:line:U1'])
    expect(seen[1]?.body).toEqual(['idx:line:U1'])
  })

  it('gives up after its attempts with an error naming counts, never the token or a value', async () => {
    answers = Array.from({ length: 5 }, () => success(['conn:a']))
    const err = await publisher([])
      .put([{ key: 'conn:a', value: 'SECRET-VALUE' }])
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(KvWriteError)
    expect(String((err as Error).message)).toMatch(/1 of 1 not written/)
    expect(String(err)).not.toContain(TOKEN)
    expect(String(err)).not.toContain('SECRET-VALUE')
    expect(seen).toHaveLength(5)
  })

  it('a Retry-After longer than its bound gives up for this pass instead of waiting', async () => {
    answers = [{ status: 429, headers: { 'retry-after': '300' } }]
    const sleeps: number[] = []
    await expect(publisher(sleeps).put([{ key: 'conn:a', value: 'A' }])).rejects.toThrow(/429/)
    expect(sleeps).toEqual([])
  })

  it('cuts a call that does not answer by its timeout', async () => {
    answers = [
      { status: 0, hang: true },
      { status: 0, hang: true },
    ]
    const started = Date.now()
    const attempt = publisher([], { timeoutMs: 200, attempts: 2 }).put([
      { key: 'conn:a', value: 'A' },
    ])
    await expect(attempt).rejects.toThrow(/no answer/)
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it('splits more than 10,000 pairs into bulk requests of 10,000', async () => {
    const pairs = Array.from({ length: 10_001 }, (_, i) => ({ key: `conn:${i}`, value: 'v' }))
    await publisher([]).put(pairs)
    expect(seen.map((s) => (s.body as unknown[]).length)).toEqual([10_000, 1])
  })
})
