/**
 * The Worker's `email()` handler in workerd, driven from Node: the deployable bundle
 * (`wrangler deploy --dry-run`) under Miniflare (local/worker-runtime.ts), started on a stack
 * (local/stack.ts) and wrapped by a test entry module that
 * imports that bundle unchanged and adds one route, `POST /__email`, which calls
 * `worker.email(message, env, ctx)` with a message built from the request (raw = the body as a
 * ReadableStream, rawSize, setReject recorded), and waits for the handler's `waitUntil` work.
 *
 * Why both that route and Miniflare's own `POST /cdn-cgi/handler/email`: the latter builds the
 * runtime's ForwardableEmailMessage (what production hands us), but refuses a message without a
 * Message-ID or From, allows 1 MiB, and cannot fake `rawSize`; the no-Message-ID, oversized and
 * unparseable cases need the direct call. Both run the same bundle in the same workerd.
 * @module
 */
import type { Stack } from '../../../local/stack'

export type EmailOutcome =
  | { outcome: 'accepted' }
  | { outcome: 'rejected'; reason: string }
  | { outcome: 'threw'; error: string }

/** A raw message: text, or its exact bytes (8-bit parts in a legacy charset). */
export type Raw = string | Uint8Array

export interface Envelope {
  /** RCPT TO: the receiving mailbox. */
  to: string
  /** MAIL FROM. @default the customer fixture's address */
  from?: string
}

export interface DirectOptions {
  /** What the runtime reports as the size (to test the 25 MiB rule without 25 MiB). */
  rawSize?: number
  /** Bindings laid over the worker's for this one call (e.g. another ORIGIN_URL). */
  env?: Record<string, string>
}

export interface EmailWorker {
  url: string
  /** Calls the handler directly inside workerd. */
  deliver(raw: Raw, envelope: Envelope, options?: DirectOptions): Promise<EmailOutcome>
  /** Miniflare's `/cdn-cgi/handler/email` (the runtime's own message object). */
  deliverViaHandler(raw: Raw, envelope: Envelope): Promise<{ status: number; text: string }>
  /**
   * Like a sending mail server: delivers, and repeats after a temporary failure (a throw), at
   * most `SENDER_ATTEMPTS` times; a reject is final. Where the test's point is the end state.
   */
  send(
    raw: Raw,
    envelope: Envelope,
    via?: 'direct' | 'handler',
  ): Promise<{ final: 'accepted' | 'rejected' | 'gave_up'; attempts: number }>
  /** The Worker's log lines so far (JSON strings). */
  logs(): string[]
  /** Its CONNECTIONS namespace (Miniflare's, in memory), where a test puts mailbox connections. */
  connections(): Promise<KVNamespace>
  close(): Promise<void>
}

const ENTRY = `import worker from './index.js'

async function deliverEmail(request, env) {
  const url = new URL(request.url)
  const overrides = JSON.parse(request.headers.get('x-test-env') || '{}')
  const body = await request.arrayBuffer()
  let rejected = null
  const message = {
    from: url.searchParams.get('from'),
    to: url.searchParams.get('to'),
    headers: new Headers(),
    raw: new Response(body).body,
    rawSize: Number(url.searchParams.get('rawSize') || body.byteLength),
    canBeForwarded: true,
    setReject(reason) { rejected = String(reason) },
    async forward() { throw new Error('forward() is not used') },
    async reply() { throw new Error('reply() is not used') },
  }
  const pending = []
  const ctx = { waitUntil: (p) => pending.push(p), passThroughOnException() {}, props: {} }
  let answer
  try {
    await worker.email(message, { ...env, ...overrides }, ctx)
    answer = rejected === null ? { outcome: 'accepted' } : { outcome: 'rejected', reason: rejected }
  } catch (err) {
    answer = { outcome: 'threw', error: String(err && err.message || err) }
  }
  await Promise.allSettled(pending)
  return Response.json(answer)
}

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === '/__email') return deliverEmail(request, env)
    return worker.fetch(request, env, ctx)
  },
  email: (message, env, ctx) => worker.email(message, env, ctx),
  queue: (batch, env, ctx) => worker.queue(batch, env, ctx),
}
`

/** A real MTA retries for days; a test needs only a few (each attempt is itself bounded). */
const SENDER_ATTEMPTS = 5
const SENDER_PAUSE_MS = 250

/** A Worker with the test entry on `stack` (wired to it, stopped with it); `vars` on top. */
export async function startEmailWorker(
  stack: Stack,
  vars: Record<string, string>,
): Promise<EmailWorker> {
  const lines: string[] = []
  const worker = await stack.startWorker({
    vars,
    entrySource: ENTRY,
    onLine: (line) => lines.push(line),
  })
  const query = (envelope: Envelope, extra: Record<string, string> = {}) =>
    new URLSearchParams({
      from: envelope.from ?? 'ada@customer.example',
      to: envelope.to,
      ...extra,
    })
  const email: EmailWorker = {
    url: worker.url,
    async deliver(raw, envelope, options = {}) {
      const extra: Record<string, string> =
        options.rawSize !== undefined ? { rawSize: String(options.rawSize) } : {}
      const response = await fetch(`${worker.url}/__email?${query(envelope, extra)}`, {
        method: 'POST',
        headers: { 'x-test-env': JSON.stringify(options.env ?? {}) },
        body: raw,
        signal: AbortSignal.timeout(30_000),
      })
      return (await response.json()) as EmailOutcome
    },
    async deliverViaHandler(raw, envelope) {
      const response = await fetch(`${worker.url}/cdn-cgi/handler/email?${query(envelope)}`, {
        method: 'POST',
        body: raw,
        signal: AbortSignal.timeout(30_000),
      })
      return { status: response.status, text: await response.text() }
    },
    async send(raw, envelope, via = 'direct') {
      for (let attempt = 1; attempt <= SENDER_ATTEMPTS; attempt++) {
        const outcome =
          via === 'direct'
            ? (await email.deliver(raw, envelope)).outcome
            : handlerOutcome((await email.deliverViaHandler(raw, envelope)).status)
        if (outcome === 'accepted' || outcome === 'rejected')
          return { final: outcome, attempts: attempt }
        await new Promise((resolve) => setTimeout(resolve, SENDER_PAUSE_MS))
      }
      return { final: 'gave_up', attempts: SENDER_ATTEMPTS }
    },
    logs: () => [...lines],
    async connections() {
      if (worker.runtime !== 'miniflare') throw new Error('the KV namespace needs Miniflare')
      return (await worker.miniflare.getKVNamespace('CONNECTIONS')) as unknown as KVNamespace
    },
    close: () => worker.stop(),
  }
  return email
}

/** Miniflare's endpoint: 200 processed, 400 the Worker rejected it, else the handler threw. */
function handlerOutcome(status: number): EmailOutcome['outcome'] {
  return status === 200 ? 'accepted' : status === 400 ? 'rejected' : 'threw'
}
