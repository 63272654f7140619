/**
 * The admin API (`/v1/admin/connections`) over HTTP against a real origin and Postgres: only the
 * operator's token opens it, it is 503 while ORIGIN_KEKS is unset, every answer (problems too)
 * validates against the served OpenAPI document, a malformed or oversized body is refused naming
 * the field with nothing written, and no answer holds a secret.
 */
import Ajv2020 from 'ajv/dist/2020.js'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../local/services'
import { loadConfig } from '../../origin/config'
import { silentLogger } from '../../origin/log'
import { type RunningOrigin, startOrigin } from '../../origin/server'
import { importKeyRing, newKekEntry } from '../../shared/envelope'
import { TEST_OPERATOR_TOKEN } from '../support/origin'

let database: TestDatabase
let origin: RunningOrigin
let off: RunningOrigin
let sql: pg.Client
let check: (method: string, path: string, response: Response, body: unknown) => void

const SECRET = 'twilio-auth-token-0123456789abcdef'
const auth = { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` }

async function start(keys: boolean) {
  const config = loadConfig({
    DATABASE_URL: database.url,
    DATABASE_DRIVER: 'pg',
    ORIGIN_SHARED_SECRET: 'admin-api-test-shared-secret',
    ORIGIN_PORT: '0',
    OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
  })
  const originKeys = keys ? await importKeyRing(newKekEntry('o1')) : null
  return startOrigin(config, {
    logger: silentLogger,
    drainTimeoutMs: 500,
    connections: { originKeys },
  })
}

beforeAll(async () => {
  database = await createTestDatabase()
  sql = new pg.Client({ connectionString: database.url })
  await sql.connect()
  origin = await start(true)
  off = await start(false)
  check = await openApiChecker(`${origin.url}/v1/admin/openapi.json`)
})
afterAll(async () => {
  await origin?.close()
  await off?.close()
  await sql?.end()
  await database?.drop()
})

async function call(
  method: string,
  path: string,
  body?: unknown,
  base = origin.url,
  headers: Record<string, string> = auth,
) {
  const text =
    typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body)
  const response = await fetch(`${base}/v1/admin/connections${path}`, {
    method,
    headers: { ...headers, ...(text !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: text,
    signal: AbortSignal.timeout(20_000),
  })
  const json = (await response.json()) as Record<string, unknown>
  expect(JSON.stringify(json)).not.toContain(SECRET)
  return { status: response.status, json, response }
}

const written = async () =>
  (
    await sql.query(`SELECT (SELECT count(*) FROM connections) + (SELECT count(*) FROM connection_secrets)
    + (SELECT count(*) FROM connection_audit) + (SELECT count(*) FROM connection_publications) AS n`)
  ).rows[0].n

let n = 0
const twilio = () => ({
  channel: 'twilio',
  account: `AC${(n++).toString(16).padStart(32, '0')}`,
  secrets: { auth_token: SECRET },
})

describe('the admin API', () => {
  it('is the operator token only (401), and 503 registry_disabled while ORIGIN_KEKS is unset', async () => {
    const anonymous = await call('GET', '', undefined, origin.url, {})
    expect(anonymous).toMatchObject({ status: 401, json: { code: 'unauthorized' } })
    const wrong = await call('GET', '', undefined, origin.url, {
      authorization: 'Bearer nope-nope-nope-nope',
    })
    expect(wrong.status).toBe(401)
    const disabled = await call('POST', '', twilio(), off.url)
    expect(disabled).toMatchObject({ status: 503, json: { code: 'registry_disabled' } })
    expect(String(disabled.json.detail)).toContain('ORIGIN_KEKS')
    check('POST', '', disabled.response, disabled.json)
  })

  it('create, show, list, rotate, disable, enable, delete: each answer as documented, none with a secret', async () => {
    const created = await call('POST', '', twilio())
    expect(created.status).toBe(201)
    check('POST', '', created.response, created.json)
    const id = created.json.id as string
    const steps: [string, string, unknown, number][] = [
      ['GET', `/${id}`, undefined, 200],
      ['GET', '?channel=twilio&limit=5', undefined, 200],
      [
        'POST',
        `/${id}/rotate`,
        { secrets: { auth_token: 'another-twilio-token-0001' }, overlapSeconds: 600 },
        200,
      ],
      ['POST', `/${id}/disable`, undefined, 200],
      ['POST', `/${id}/enable`, undefined, 200],
      ['POST', '/resync', undefined, 202],
      ['DELETE', `/${id}`, undefined, 200],
      ['GET', `/${id}`, undefined, 404],
    ]
    for (const [method, path, body, status] of steps) {
      const answer = await call(method, path, body)
      expect(answer.status, `${method} ${path}`).toBe(status)
      check(method, path, answer.response, answer.json)
    }
    const audit = (
      await sql.query(
        'SELECT action, actor FROM connection_audit WHERE connection_id = $1 ORDER BY id',
        [id],
      )
    ).rows
    expect(audit.map((a) => a.action)).toEqual(['create', 'rotate', 'disable', 'enable', 'delete'])
    expect(audit.every((a) => a.actor === 'operator (HTTP API)')).toBe(true)
  })

  it.each([
    ['a bad account', { ...twilio(), account: 'AC-nope' }, 400, 'account'],
    ['an unknown field', { ...twilio(), colour: 'red' }, 400, 'colour'],
    ['a missing secret', { ...twilio(), secrets: {} }, 400, 'secrets.auth_token'],
    ['not JSON', '{"channel":', 400, '(body)'],
    ['an oversized body', { ...twilio(), padding: 'x'.repeat(300 * 1024) }, 413, '(body)'],
    [
      'too many ids',
      {
        channel: 'messenger',
        account: '123',
        ids: Array.from({ length: 1001 }, (_, i) => String(i)),
        secrets: { app_secret: SECRET },
      },
      400,
      'ids',
    ],
  ])('refuses %s naming the field, writing nothing', async (_what, body, status, field) => {
    const before = await written()
    const answer = await call('POST', '', body)
    expect(answer).toMatchObject({ status, json: { field } })
    check('POST', '', answer.response, answer.json)
    expect(await written()).toBe(before)
  })

  it('a second create of one account is 409 connection_exists; a bad rotate names its field', async () => {
    const input = twilio()
    const first = await call('POST', '', input)
    const again = await call('POST', '', input)
    expect(again).toMatchObject({
      status: 409,
      json: { code: 'connection_exists', field: 'account' },
    })
    check('POST', '', again.response, again.json)
    const rotate = await call('POST', `/${first.json.id}/rotate`, {
      secrets: { auth_token: SECRET },
      overlapSeconds: -1,
    })
    expect(rotate).toMatchObject({ status: 400, json: { field: 'overlapSeconds' } })
    check('POST', '/{id}/rotate', rotate.response, rotate.json)
  })
})

type Doc = {
  components: Record<string, unknown>
  paths: Record<
    string,
    Record<
      string,
      {
        responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>
      }
    >
  >
}

/** Checks an answer against the served document: its status documented, its body valid. */
async function openApiChecker(url: string) {
  const doc = (await (await fetch(url)).json()) as Doc
  const ajv = new Ajv2020({ strict: false, validateFormats: false })
  ajv.addSchema({ $id: 'openapi', components: doc.components })
  const template = (path: string) =>
    `/v1/admin/connections${path.split('?')[0]}`
      .replace(/\/c_[a-z2-7]{26}/, '/{id}')
      .replace(/\/$/, '')
  return (method: string, path: string, response: Response, body: unknown) => {
    const operation = doc.paths[template(path)]?.[method.toLowerCase()]
    const documented = operation?.responses[String(response.status)]
    expect(documented, `${method} ${path} ${response.status} is documented`).toBeDefined()
    const type = (response.headers.get('content-type') ?? '').split(';')[0] as string
    const schema = documented?.content?.[type]?.schema
    expect(schema, `${type} documented`).toBeDefined()
    const ref = schema?.$ref as string | undefined
    const validate = ref ? ajv.getSchema(ref.replace('#', 'openapi#')) : ajv.compile(schema ?? {})
    expect(validate?.(body), JSON.stringify(validate?.errors)).toBe(true)
  }
}
