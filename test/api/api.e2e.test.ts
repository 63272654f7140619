/**
 * POST /v1/messages end to end: the deployable Worker bundle (Miniflare, its spool queue), the real
 * origin (a process: killed and restarted), real Postgres, real Redis (stopped and started). The
 * assertions are on message rows, `idempotency_keys` rows and the answers; every answer is checked
 * against the OpenAPI document the Worker serves (Ajv, JSON Schema 2020-12).
 */
import Ajv2020 from 'ajv/dist/2020.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../shared/crypto'
import { eventually, startTestStack, type TestStack } from '../support/test-stack'

const KEYS = { acme: 'e2e-acme-key', globex: 'e2e-globex-key' }
const APP = 'https://app.acme.example'

let e2e: TestStack
let checkAnswer: (response: Response, body: unknown) => void

beforeAll(async () => {
  e2e = await startTestStack('e2e-api', {
    workerVars: {
      API_KEYS: JSON.stringify({
        [await sha256Hex(KEYS.acme)]: 'acme',
        [await sha256Hex(KEYS.globex)]: 'globex',
      }),
      API_ALLOWED_ORIGINS: `acme=${APP}`,
      SPOOL_RETRY_BASE_SECONDS: '1',
      SPOOL_RETRY_MAX_SECONDS: '2',
      // These tests are of the key's answers (201, 409, the replay). On a loaded machine a forward
      // slower than SHED_SLOW_MS would be queued instead (202, the shedding the overload tests
      // cover): shedding off, so the answer depends on the key alone.
      SHED_AFTER_FAILURES: '0',
    },
    onWorkerLine: () => {},
  })
  checkAnswer = await openApiChecker(`${e2e.stack.worker.url}/v1/openapi.json`)
}, 180_000)

afterAll(async () => {
  await e2e?.stop()
})

interface Answer {
  status: number
  replayed: boolean
  body: Record<string, unknown>
}

const freshKey = () => `"${crypto.randomUUID()}"`
const MESSAGE = { customer: { id: 'cust-e2e', name: 'Ada', email: 'ada@example.com' }, text: 'hi' }

async function post(
  key: string,
  body: unknown = MESSAGE,
  apiKey: string = KEYS.acme,
): Promise<Answer> {
  const response = await fetch(`${e2e.stack.worker.url}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  const json = (await response.json()) as Record<string, unknown>
  checkAnswer(response, json)
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    body: json,
  }
}

/** Message rows of a key (the message key is the tenant's and the Idempotency-Key's). */
async function rows(tenant: string, key: string): Promise<number> {
  const unquoted = key.replaceAll('"', '')
  const { rows } = await e2e.stack.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM messages WHERE channel = 'api' AND channel_message_id = $1`,
    [
      `${tenant}:${/^[A-Za-z0-9_-]{1,64}$/.test(unquoted) ? unquoted : `sha256:${await sha256Hex(unquoted)}`}`,
    ],
  )
  return rows[0]?.n ?? 0
}

async function storedAnswers(tenant: string, key: string): Promise<Array<{ status: number }>> {
  const { rows } = await e2e.stack.sql.query<{ status: number }>(
    'SELECT status FROM idempotency_keys WHERE tenant = $1 AND key_hash = $2',
    [tenant, await sha256Hex(key.replaceAll('"', ''))],
  )
  return rows
}

async function dropRedisClaims(): Promise<void> {
  const keys = await e2e.stack.redisClient.keys(`${e2e.stack.keyPrefix}idem:*`)
  if (keys.length > 0) await e2e.stack.redisClient.del(...keys)
}

describe('POST /v1/messages end to end', () => {
  it('replay: the same answer, marked, one row, one stored answer', async () => {
    const key = freshKey()
    const first = await post(key)
    expect(first).toMatchObject({ status: 201, replayed: false })
    const again = await post(key)
    expect(again).toEqual({ ...first, replayed: true })
    expect(await rows('acme', key)).toBe(1)
    expect(await storedAnswers('acme', key)).toEqual([{ status: 201 }])
  })

  it('the draft errors: missing and malformed 400, mismatch 422 (nothing written)', async () => {
    const response = await fetch(`${e2e.stack.worker.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.acme}`, 'content-type': 'application/json' },
      body: JSON.stringify(MESSAGE),
    })
    checkAnswer(response, await response.clone().json())
    expect(response.status).toBe(400)
    expect((await post('"unterminated')).status).toBe(400)
    const key = freshKey()
    expect((await post(key)).status).toBe(201)
    const other = await post(key, { ...MESSAGE, text: 'changed' })
    expect(other.status).toBe(422)
    expect(await rows('acme', key)).toBe(1)
  })

  it('50 at once with one key: one row, one stored answer; the others 409 or the replay', async () => {
    const key = freshKey()
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(key)))
    expect(answers.every((a) => a.status === 201 || a.status === 409)).toBe(true)
    const created = answers.filter((a) => a.status === 201)
    expect(created.filter((a) => !a.replayed)).toHaveLength(1)
    expect(new Set(created.map((a) => JSON.stringify(a.body))).size).toBe(1)
    expect(await rows('acme', key)).toBe(1)
    expect(await storedAnswers('acme', key)).toHaveLength(1)
  })

  it('one key from two tenants: two rows', async () => {
    const key = freshKey()
    expect((await post(key)).status).toBe(201)
    expect(await post(key, MESSAGE, KEYS.globex)).toMatchObject({ status: 201, replayed: false })
    expect(await rows('acme', key)).toBe(1)
    expect(await rows('globex', key)).toBe(1)
  })

  it('expiry: the Redis claim gone, Postgres answers; its row expired too, still one row', async () => {
    const key = freshKey()
    const first = await post(key)
    await dropRedisClaims()
    const fromPostgres = await post(key)
    expect(fromPostgres).toEqual({ ...first, replayed: true })
    // The same bytes: key order included.
    expect(JSON.stringify(fromPostgres.body)).toBe(JSON.stringify(first.body))
    await e2e.stack.sql.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'
        WHERE tenant = 'acme' AND key_hash = $1`,
      [await sha256Hex(key.replaceAll('"', ''))],
    )
    await dropRedisClaims()
    // Past retention the key is a new request: it runs, and finds its message (one row).
    const after = await post(key)
    expect(after).toEqual({ ...first, replayed: false })
    expect(await rows('acme', key)).toBe(1)
  })

  it('Redis down: Postgres decides alone (replay, mismatch, one row)', async () => {
    const key = freshKey()
    await e2e.stack.redis.stop()
    try {
      const first = await post(key)
      expect(first.status).toBe(201)
      expect(await post(key)).toEqual({ ...first, replayed: true })
      expect((await post(key, { ...MESSAGE, text: 'changed' })).status).toBe(422)
    } finally {
      await e2e.stack.redis.start()
    }
    expect(await rows('acme', key)).toBe(1)
  }, 60_000)

  it('a sentAt Postgres cannot store (30 February, the year 0000): 400 with the origin up and down, nothing written or queued', async () => {
    const unstorable = ['2026-02-30T10:00:00Z', '0000-06-01T00:00:00Z']
    const refused = async () => {
      for (const sentAt of unstorable) {
        const key = freshKey()
        const answer = await post(key, { ...MESSAGE, sentAt })
        expect(answer.status).toBe(400)
        expect(answer.body).toMatchObject({ detail: expect.stringMatching(/^sentAt: /) })
        keys.push(key)
      }
    }
    const keys: string[] = []
    await refused()
    await e2e.stack.origin.kill('SIGKILL')
    try {
      await refused()
    } finally {
      await e2e.stack.origin.restart()
    }
    // A time at the calendar's edge that Postgres takes is stored.
    const leap = freshKey()
    expect((await post(leap, { ...MESSAGE, sentAt: '2024-02-29T23:59:59+15:59' })).status).toBe(201)
    expect(await rows('acme', leap)).toBe(1)
    for (const key of keys) expect(await rows('acme', key)).toBe(0)
    const { rows: failures } = await e2e.stack.sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM channel_failures WHERE channel = 'api'`,
    )
    expect(failures[0]?.n).toBe(0)
  }, 120_000)

  it('origin down: 202 queued; it lands once; the retry answers as stored', async () => {
    const key = freshKey()
    await e2e.stack.origin.kill('SIGKILL')
    try {
      expect(await post(key)).toMatchObject({ status: 202, body: { status: 'queued' } })
      expect((await post(key)).status).toBe(202)
    } finally {
      await e2e.stack.origin.restart()
    }
    await eventually(async () => (await rows('acme', key)) === 1)
    const retry = await post(key)
    expect(retry).toMatchObject({ status: 201, replayed: true, body: { status: 'created' } })
    expect(await post(key)).toEqual(retry)
    expect(await rows('acme', key)).toBe(1)
    expect(await storedAnswers('acme', key)).toEqual([{ status: 201 }])
  }, 120_000)
})

describe('CORS end to end', () => {
  it('a preflight from an allowed origin: 204; its POST answered with the headers exposed', async () => {
    const preflight = await fetch(`${e2e.stack.worker.url}/v1/messages`, {
      method: 'OPTIONS',
      headers: {
        origin: APP,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe(APP)
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Idempotency-Key/)
    const response = await fetch(`${e2e.stack.worker.url}/v1/messages`, {
      method: 'POST',
      headers: {
        origin: APP,
        authorization: `Bearer ${KEYS.acme}`,
        'content-type': 'application/json',
        'idempotency-key': freshKey(),
      },
      body: JSON.stringify(MESSAGE),
    })
    checkAnswer(response, await response.clone().json())
    expect(response.status).toBe(201)
    expect(response.headers.get('access-control-expose-headers')).toMatch(
      /Idempotent-Replayed.*Retry-After/,
    )
  })

  it("globex's key from acme's origin: 403, nothing written", async () => {
    const key = freshKey()
    const response = await fetch(`${e2e.stack.worker.url}/v1/messages`, {
      method: 'POST',
      headers: {
        origin: APP,
        authorization: `Bearer ${KEYS.globex}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify(MESSAGE),
    })
    checkAnswer(response, await response.clone().json())
    expect(response.status).toBe(403)
    expect(await rows('globex', key)).toBe(0)
  })
})

/**
 * Checks one answer against the served document: its status is documented, its content type is
 * the documented one (problem+json for every error), its body validates against the schema, and
 * any Idempotent-Replayed / Retry-After header it carries is documented for that status.
 */
async function openApiChecker(url: string): Promise<(response: Response, body: unknown) => void> {
  const doc = (await (await fetch(url)).json()) as OpenApiDoc
  expect(doc.openapi).toBe('3.1.0')
  const ajv = new Ajv2020({ strict: false, validateFormats: false })
  ajv.addSchema({ $id: 'openapi', components: doc.components })
  return (response, body) => {
    const documented = doc.paths['/v1/messages']?.post.responses[String(response.status)]
    expect(documented, `status ${response.status} is documented`).toBeDefined()
    const type = (response.headers.get('content-type') ?? '').split(';')[0] as string
    if (response.status >= 400) expect(type).toBe('application/problem+json')
    const media = documented?.content?.[type]
    expect(media, `${type} is documented for ${response.status}`).toBeDefined()
    const ref = (media?.schema.$ref ?? '').replace('#', 'openapi#')
    const validate = ajv.getSchema(ref)
    expect(validate, ref).toBeDefined()
    expect(validate?.(body), JSON.stringify(validate?.errors)).toBe(true)
    for (const header of ['Idempotent-Replayed', 'Retry-After']) {
      if (response.headers.has(header)) expect(documented?.headers ?? {}).toHaveProperty(header)
    }
  }
}

interface OpenApiDoc {
  openapi: string
  components: Record<string, unknown>
  paths: Record<
    string,
    {
      post: {
        responses: Record<
          string,
          {
            headers?: Record<string, unknown>
            content?: Record<string, { schema: { $ref: string } }>
          }
        >
      }
    }
  >
}
