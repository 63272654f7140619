/**
 * A stand-in origin for the worker tests in workerd (Node side, started by the global setup): a
 * real HTTP server that checks the forward signature and the event schema the way the real
 * origin must, records every call, emulates the messages table's unique key, and can be told to
 * fail. It proves what the Worker sends and when; it is not what proves end-to-end dedup (that
 * is the `*.e2e.test.ts` with the real origin and Postgres).
 *
 * Each test uses its own namespace (`{url}/ns/{id}` as ORIGIN_URL), so files can run at once.
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { DecisionBatch, TallyRow } from '../../../contract/decision-counts'
import { type InboundEvent, parseInboundEvent } from '../../../contract/event'
import {
  ANSWER_SIGNATURE_HEADER,
  signAnswer,
  verifyForward,
} from '../../../contract/forward-signature'
import type { IdempotentRequest } from '../../../contract/idempotency'
import { problemBody } from '../../../contract/problem'
import { readBody } from '../../../local/http-body'

/** How the origin of one namespace answers. */
export type OriginMode =
  /** `batch: false`: a proxy in front refusing each batch as a whole (413, its body limit). */
  | { kind: 'ok'; batch?: false }
  | { kind: 'fail'; status: number; delayMs?: number }
  | { kind: 'delay'; ms: number }
  | { kind: 'reject' }
  /** Only these deliveries fail with `status` (a WAF refusing one message's text); others ok. */
  | { kind: 'poison'; deliveryKeys: string[]; status: number }
  /** An SSO wall in front: 302 to a login page that answers 200 (HTML). Nothing is recorded. */
  | { kind: 'redirect' }
  /** A proxy in front answering 200 with its own HTML page. Nothing is recorded. */
  | { kind: 'html' }
  /** The origin's right answer, without an answer signature (what anyone on the path could send). */
  | { kind: 'unsigned' }

export interface OriginCall {
  deliveryKey: string
  messageKey: string
  channel: string
  kind: string
  payloadHash: string
  answered: number
  body: string
  attachments?: InboundEvent['attachments']
  /** The connection the Worker says verified it (worker/connections/). */
  connection?: InboundEvent['connection']
}

/** A dead-letter report (`POST /v1/failures/inbound`) as the origin received it. */
export interface DeadReportCall {
  channel: string
  deliveryKey: string
  /** What channel_failures keeps for the replay. */
  event: unknown
  error: string
  attempts: number
  answered: number
}

interface Namespace {
  mode: OriginMode
  calls: OriginCall[]
  rows: Map<string, string>
  dead: DeadReportCall[]
  /** Idempotency-Key answers by (tenant, route, key hash). */
  answers: Map<string, { fingerprint: string; status: number; body: unknown }>
  /** How many batch requests (`POST /v1/events/batch`) came, and how many events each held. */
  batches: number[]
  /** The decision counts' rows taken (`POST /v1/decisions`), each batch id once. */
  decisions: TallyRow[]
  decisionBatchIds: Set<string>
  /** One-time signature bindings (`POST /v1/signature-bindings`): key to its first body's hash. */
  bindings: Map<string, string>
}

export interface FakeOrigin {
  url: string
  close(): Promise<void>
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

type Reply = (status: number, body: unknown) => Promise<void>

/** An answer as the origin gives it to a verified request: signed for that request. */
async function sendSigned(
  res: ServerResponse,
  status: number,
  body: unknown,
  secret: string,
  requestSignature: string,
): Promise<void> {
  const text = JSON.stringify(body)
  const signature = await signAnswer(secret, requestSignature, status, text)
  res.writeHead(status, {
    'content-type': 'application/json',
    [ANSWER_SIGNATURE_HEADER]: signature,
  })
  res.end(text)
}

const LOGIN_PAGE = '<!doctype html><title>Sign in</title><form>Sign in to continue</form>'

/** The requests the login page was asked for, per namespace (a followed redirect lands there). */
const loginHits = new Map<string, number>()
/** GET /healthz per namespace: the Worker's health probe must be cached, not sent per hit. */
const healthHits = new Map<string, number>()

export async function startFakeOrigin(secrets: string[]): Promise<FakeOrigin> {
  const namespaces = new Map<string, Namespace>()
  const ns = (id: string): Namespace => {
    const n = namespaces.get(id) ?? {
      mode: { kind: 'ok' },
      calls: [],
      rows: new Map(),
      dead: [],
      answers: new Map(),
      batches: [],
      decisions: [],
      decisionBatchIds: new Set(),
      bindings: new Map(),
    }
    namespaces.set(id, n)
    return n
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match =
      /^\/ns\/([\w-]+)\/(v1\/events|v1\/events\/batch|v1\/failures\/inbound|v1\/decisions|v1\/signature-bindings|mode|calls|login|healthz)$/.exec(
        req.url ?? '',
      )
    if (!match) return send(res, 404, { error: { code: 'not_found' } })
    const [, id = '', route] = match
    const space = ns(id)
    const body = await readBody(req)
    if (route === 'login') {
      loginHits.set(id, (loginHits.get(id) ?? 0) + 1)
      res.writeHead(200, { 'content-type': 'text/html' })
      return void res.end(LOGIN_PAGE)
    }
    if (space.mode.kind === 'redirect' && (req.method === 'POST' || route === 'healthz')) {
      res.writeHead(302, { location: `/ns/${id}/login` })
      return void res.end()
    }
    if (route === 'healthz' && req.method === 'GET') {
      healthHits.set(id, (healthHits.get(id) ?? 0) + 1)
      return send(res, 200, { ok: true })
    }
    if (space.mode.kind === 'html' && req.method === 'POST') {
      res.writeHead(200, { 'content-type': 'text/html' })
      return void res.end(LOGIN_PAGE)
    }
    if (route === 'mode' && req.method === 'PUT') {
      space.mode = JSON.parse(body) as OriginMode
      return send(res, 200, space.mode)
    }
    if (route === 'calls' && req.method === 'GET') {
      return send(res, 200, {
        calls: space.calls,
        rows: space.rows.size,
        dead: space.dead,
        batches: space.batches,
        decisions: space.decisions,
        bindings: Object.fromEntries(space.bindings),
        logins: loginHits.get(id) ?? 0,
        healthChecks: healthHits.get(id) ?? 0,
      })
    }
    if (req.method !== 'POST') return send(res, 405, {})
    if (route === 'v1/events/batch' && space.mode.kind === 'ok' && space.mode.batch === false) {
      return send(res, 413, { error: { code: 'payload_too_large' } })
    }

    const requestSignature = req.headers['x-dedup-signature'] as string | undefined
    const verdict = await verifyForward(secrets, { method: 'POST', path: `/${route}` }, body, {
      timestamp: req.headers['x-dedup-timestamp'] as string | undefined,
      signature: requestSignature,
    })
    if (!verdict.ok)
      return send(res, 401, { error: { code: 'unauthorized', message: 'unauthorized' } })
    // Like the origin: every answer to a verified request is signed (unless told not to).
    const reply: Reply =
      space.mode.kind === 'unsigned'
        ? async (status, answer) => send(res, status, answer)
        : (status, answer) =>
            sendSigned(res, status, answer, verdict.secret, requestSignature as string)
    if (route === 'v1/failures/inbound') return recordDead(space, body, reply)
    if (route === 'v1/decisions') return recordDecisions(space, body, reply)
    if (route === 'v1/signature-bindings') return bindSignature(space, body, reply)
    if (route === 'v1/events/batch') {
      // As the origin: one answer per event, each what the event alone would get; 200 as a whole.
      const { events } = JSON.parse(body) as { events: unknown[] }
      space.batches.push(events.length)
      const results = []
      for (const item of events) {
        const [status, answer] = await answerEvent(space, item)
        results.push({ status, ...answer })
      }
      return reply(200, { results })
    }
    const [status, answer] = await answerEvent(space, JSON.parse(body))
    return reply(status, answer)
  }

  /** What the origin answers for one event, by the namespace's mode. */
  async function answerEvent(
    space: Namespace,
    input: unknown,
  ): Promise<[number, Record<string, unknown>]> {
    const parsed = parseInboundEvent(input)
    if (!parsed.ok) return [400, { error: { code: 'invalid_event', message: parsed.message } }]
    const event = parsed.event
    const call: OriginCall = {
      deliveryKey: event.deliveryKey,
      messageKey: event.messageKey,
      channel: event.channel,
      kind: event.kind,
      payloadHash: event.payloadHash,
      answered: 0,
      body: event.body,
      ...(event.attachments ? { attachments: event.attachments } : {}),
      ...(event.connection ? { connection: event.connection } : {}),
    }
    space.calls.push(call)
    const mode = space.mode
    if (mode.kind === 'poison' && mode.deliveryKeys.includes(event.deliveryKey)) {
      call.answered = mode.status
      return [mode.status, { error: { code: 'forbidden' } }]
    }
    if (mode.kind === 'fail') {
      if (mode.delayMs) await new Promise((r) => setTimeout(r, mode.delayMs))
      call.answered = mode.status
      return [mode.status, { error: { code: 'database_unavailable' } }]
    }
    if (mode.kind === 'reject') {
      call.answered = 400
      return [400, { error: { code: 'invalid_event', message: 'rejected by test' } }]
    }
    if (mode.kind === 'delay') await new Promise((r) => setTimeout(r, mode.ms))
    if (event.idempotency) return answerOnce(space, event, event.idempotency, call)
    const rowKey = `${event.channel}:${event.messageKey}`
    const existing = space.rows.get(rowKey)
    if (existing !== undefined && event.kind === 'message') {
      call.answered = 200
      return [
        200,
        {
          outcome: 'duplicate',
          duplicate: true,
          messageId: '1',
          conversationId: '1',
          customerId: '1',
          ...(existing === event.payloadHash ? {} : { payloadMismatch: true }),
        },
      ]
    }
    if (event.kind === 'message') space.rows.set(rowKey, event.payloadHash)
    call.answered = event.kind === 'message' ? 201 : 200
    return [
      call.answered,
      {
        outcome: event.kind === 'message' ? 'created' : 'updated',
        duplicate: false,
        messageId: '1',
        conversationId: '1',
        customerId: '1',
      },
    ]
  }

  /**
   * An `api` event, as origin/idempotency.ts does it: the answer stored for its key (replayed, or
   * 422 for another fingerprint), else its row and its answer, stored together.
   */
  function answerOnce(
    space: Namespace,
    event: InboundEvent,
    request: IdempotentRequest,
    call: OriginCall,
  ): [number, Record<string, unknown>] {
    const scope = `${event.tenant}|${request.route}|${request.keyHash}`
    const found = space.answers.get(scope)
    const created = !found && !space.rows.has(`${event.channel}:${event.messageKey}`)
    if (created) space.rows.set(`${event.channel}:${event.messageKey}`, event.payloadHash)
    const stored = found ?? {
      fingerprint: request.fingerprint,
      status: 201,
      body: {
        id: String(space.rows.size),
        conversationId: '1',
        customerId: '1',
        status: 'created',
      },
    }
    if (!found) space.answers.set(scope, stored)
    const answer =
      stored.fingerprint === request.fingerprint
        ? { status: stored.status, body: stored.body, replayed: found !== undefined }
        : { status: 422, body: problemBody('idempotency_key_reused'), replayed: false }
    call.answered = created ? 201 : 200
    return [
      call.answered,
      {
        outcome: created ? 'created' : 'duplicate',
        duplicate: !created,
        messageId: null,
        conversationId: null,
        customerId: null,
        answer,
      },
    ]
  }

  /** The dead-letter consumer's report: taken (201) unless the namespace is failing. */
  function recordDead(space: Namespace, body: string, reply: Reply): Promise<void> {
    const report = JSON.parse(body) as Omit<DeadReportCall, 'answered'>
    const answered = space.mode.kind === 'fail' ? space.mode.status : 201
    space.dead.push({
      channel: report.channel,
      deliveryKey: report.deliveryKey,
      event: report.event,
      error: report.error,
      attempts: report.attempts,
      answered,
    })
    return reply(answered, answered === 201 ? { failureId: String(space.dead.length) } : {})
  }

  /** A one-time signature's binding, first hash wins (origin/signature-bindings.ts, no expiry). */
  function bindSignature(space: Namespace, body: string, reply: Reply): Promise<void> {
    if (space.mode.kind === 'fail') return reply(space.mode.status, {})
    const { key, hash } = JSON.parse(body) as { key: string; hash: string }
    const held = space.bindings.get(key) ?? hash
    space.bindings.set(key, held)
    return reply(200, { binding: held === hash ? 'bound' : 'other' })
  }

  /** The Worker's decision counts: taken (200) unless the namespace is failing, as the origin. */
  function recordDecisions(space: Namespace, body: string, reply: Reply): Promise<void> {
    if (space.mode.kind === 'fail') return reply(space.mode.status, {})
    const batch = JSON.parse(body) as DecisionBatch
    if (!space.decisionBatchIds.has(batch.id)) space.decisions.push(...batch.rows)
    space.decisionBatchIds.add(batch.id)
    return reply(200, { ok: true })
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      if (!res.headersSent)
        send(res, 500, { error: { code: 'internal_error', message: err.message } })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
