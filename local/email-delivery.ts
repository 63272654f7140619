/**
 * `send-webhook email`: a raw message (RFC 5322) handed to the Worker's `email()` handler the way
 * Cloudflare Email Routing hands one over, through wrangler's local endpoint
 * (`POST /cdn-cgi/handler/email?from=…&to=…`, the envelope in the query).
 *
 * That endpoint is wrangler's, not ours: it refuses a message without a Message-ID, and answers an
 * empty one or one without a From header with a TypeError of its own. So the message is checked
 * here first, as that endpoint's parser (postal-mime) reads it, and each missing part is said in
 * words; nothing is sent until it would be taken.
 * @module
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import PostalMime from 'postal-mime'
import { CUSTOMER, MAILBOX, rawEmail } from './vendor-deliveries'
import { type Built, given, type Options } from './webhook-signing'
import { REPO_ROOT } from './wrangler-config'

/** The README's example message. */
export const SAMPLE_EMAIL = join(REPO_ROOT, 'local', 'samples', 'hello.eml')
/** What wrangler's local endpoint takes (production Email Routing takes 25 MiB). */
export const LOCAL_EMAIL_MAX_BYTES = 1024 * 1024

/** A message the local endpoint would not hand to the Worker, in words. */
export class EmailCheckError extends Error {
  readonly code = 'email_not_sendable'
}

/**
 * The request for `--file PATH` (the message as it is) or, without it, a new message (a fresh
 * Message-ID unless `--id`) from `--from` to `--to` saying `--text`.
 */
export async function buildEmail(base: string, o: Options): Promise<Built> {
  const file = given(o, 'file')
  const raw = file === undefined ? newMessage(o) : readMessage(file)
  const where = file ?? 'the message'
  const envelope = await checkMessage(raw, where)
  const from = given(o, 'from') ?? envelope.from
  const to = given(o, 'to') ?? envelope.to
  if (!to) throw new EmailCheckError(`${where} has no To address: give --to (the routed address)`)
  const query = new URLSearchParams({ from, to })
  return {
    url: `${base}/cdn-cgi/handler/email?${query}`,
    headers: { 'content-type': 'message/rfc822' },
    body: raw,
  }
}

function newMessage(o: Options): string {
  return rawEmail({
    from: given(o, 'from') ?? `"Ada Customer" <${CUSTOMER}>`,
    to: given(o, 'to') ?? MAILBOX,
    messageId: given(o, 'id')?.replace(/^<|>$/g, ''),
    text: given(o, 'text') ?? 'hello from send-webhook',
    date: new Date().toUTCString(),
  })
}

function readMessage(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (err) {
    throw new EmailCheckError(`${file}: cannot read it (${(err as NodeJS.ErrnoException).code})`)
  }
}

/** The envelope the message's own headers give, once it has every part the endpoint needs. */
async function checkMessage(raw: string, where: string): Promise<{ from: string; to?: string }> {
  const bytes = new TextEncoder().encode(raw)
  if (raw.trim() === '') throw new EmailCheckError(`${where} is empty: no message to send`)
  if (bytes.byteLength > LOCAL_EMAIL_MAX_BYTES) {
    throw new EmailCheckError(
      `${where} is ${bytes.byteLength} bytes: wrangler's local email endpoint takes at most ${LOCAL_EMAIL_MAX_BYTES}`,
    )
  }
  const parsed = await PostalMime.parse(bytes)
  if (!parsed.messageId) {
    throw new EmailCheckError(
      `${where} has no Message-ID header: wrangler's local email endpoint refuses such a message (add one, e.g. Message-ID: <1@customer.example>)`,
    )
  }
  const from = parsed.from?.address
  if (!from) {
    throw new EmailCheckError(
      `${where} has no From address: the local endpoint cannot take it, and the gateway would bounce it (no customer to file it under)`,
    )
  }
  return { from, to: parsed.to?.[0]?.address }
}

/** What the local endpoint's answer means: it says nothing of new or duplicate (the log does). */
export function describeEmailAnswer(status: number): string {
  return status === 200
    ? "taken by email() (the worker's log line says new or duplicate)"
    : 'not taken'
}
