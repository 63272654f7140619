/**
 * Cloudflare Email Routing → the Worker's `email()` handler. The same delivery core as the
 * webhooks (deliver.ts); its outcome becomes SMTP's answers instead of HTTP statuses:
 * - returning normally accepts the email (new, or a duplicate already taken);
 * - throwing gives the sending server a temporary SMTP error, and it retries on its own schedule
 *   (minutes to days): for "not now" (origin down or 5xx, another attempt in flight, our config);
 * - `message.setReject(reason)` is a permanent SMTP error (a bounce): for an email that can never
 *   be taken (over 25 MiB, unparseable, no From, refused by the origin as invalid).
 * The log line says which, with the keys; never the body or the sender's address.
 *
 * Keys come from email/parse.ts, the parser the Gmail poller uses too: delivery key
 * `dedup:email:{mailbox}:{hash of the From address}:{Message-ID or content hash}` (the mailbox:
 * the RCPT TO without its `+tag`, an alias mapped to its inbox: email/mailbox.ts), so an email
 * that arrives both ways is claimed once in Redis and stored once in Postgres, and another
 * sender reusing its Message-ID is a mail of its own. The aliases come from the recipient's
 * mailbox connection when the registry has one (worker/connections/mailbox.ts), else from
 * EMAIL_MAILBOX_ALIASES; a disabled mailbox is a temporary error.
 * @module
 */

import type { EventConnection } from '../contract/connection'
import type { MailboxAliases } from '../email/mailbox'
import {
  EmailParseError,
  type EmailParseErrorCode,
  MAX_EMAIL_BYTES,
  parseEmail,
} from '../email/parse'
import { settingsFor } from './config'
import { pickMailbox } from './connections/mailbox'
import { type DeliveryContext, deliver, deliveryContext, logOutcome, type Outcome } from './deliver'
import type { Env } from './env'
import { logDecision, logProblem } from './log'

/**
 * How long one delivery may take. SMTP gives a handler minutes, but a slow attempt only delays
 * the sender's retry; the origin call itself is bounded by ORIGIN_TIMEOUT_MS.
 */
export const EMAIL_BUDGET_MS = 10_000

/** The SMTP reply codes the decision log shows (the webhooks log HTTP statuses). */
const SMTP_ACCEPTED = 250
const SMTP_TEMPORARY = 451
const SMTP_REJECTED = 550

/** What the sender's server reads in the bounce: short, fixed, nothing from the message. */
const REJECT_REASONS: Record<EmailParseErrorCode | 'refused', string> = {
  too_large: 'Message too large (the limit is 25 MiB)',
  unparseable: 'Message could not be parsed',
  no_sender: 'Message has no From address',
  bad_mailbox: 'Recipient address not accepted',
  refused: 'Message refused by the receiving system',
}

/** Thrown to ask the sending server to try again later (temporary SMTP error). */
export class EmailRetryLaterError extends Error {
  readonly code = 'email_retry_later'
  constructor(reason: string) {
    super(`email not taken now, the sender will retry: ${reason}`)
    this.name = 'EmailRetryLaterError'
  }
}

export async function handleEmail(
  message: ForwardableEmailMessage,
  env: Env,
  ctx: ExecutionContext,
): Promise<void> {
  const startedAt = Date.now()
  // Rule 1: the size the runtime measured, before a byte is read.
  if (message.rawSize > MAX_EMAIL_BYTES) return reject(message, 'too_large', startedAt)
  const settings = settingsFor(env)
  if (!settings.origin) {
    logProblem('error', 'channel_not_configured', {
      channel: 'email',
      detail: 'set ORIGIN_URL, ORIGIN_SHARED_SECRET',
    })
    throw new EmailRetryLaterError('channel_not_configured')
  }
  const aliases = await mailboxAliases(env, message.to, settings.mailboxAliases)
  // Rule 2: `raw` is a single-use stream; read it once, then parse the buffer.
  const raw = new Uint8Array(await new Response(message.raw).arrayBuffer())
  let parsed: Awaited<ReturnType<typeof parseEmail>>
  try {
    parsed = await parseEmail(raw, { mailbox: message.to, aliases: aliases.aliases })
  } catch (err) {
    if (err instanceof EmailParseError) return reject(message, err.code, startedAt)
    throw err
  }

  const context = deliveryContext(env, settings, {
    channel: 'email',
    startedAt,
    budgetMs: EMAIL_BUDGET_MS,
    waitUntil: (promise) => ctx.waitUntil(promise),
  })
  // The origin refuses the event at once if the connection is disabled since (ingest-guard.ts).
  const draft = aliases.connection
    ? { ...parsed.draft, connection: aliases.connection }
    : parsed.draft
  const outcome = await deliver(context, { action: 'forward', key: parsed.key, draft }, '')
  answer(message, context, outcome)
}

/**
 * The aliases the recipient is keyed with: its mailbox connection's, found by the envelope
 * recipient (worker/connections/mailbox.ts: the registry wins), else EMAIL_MAILBOX_ALIASES.
 * @throws {EmailRetryLaterError} when neither can be used now: KV failing, the connection
 *   disabled (temporary, not a bounce: a disable is undone by an enable, and the sending server
 *   keeps the mail and retries for days, bouncing it itself if it is never enabled), or the
 *   variable invalid (keyed without the aliases, a mail to an alias would be another row than
 *   the same mail polled from Gmail).
 */
async function mailboxAliases(
  env: Env,
  recipient: string,
  variables: MailboxAliases | null,
): Promise<{ aliases: MailboxAliases; connection?: EventConnection }> {
  const pick = await pickMailbox(env, recipient)
  if (pick.kind === 'connection') return pick
  if (pick.kind === 'disabled') {
    logProblem('warn', 'connection_disabled', {
      channel: 'email',
      connection: pick.connection.id,
      connectionVersion: pick.connection.version,
    })
    throw new EmailRetryLaterError('connection_disabled')
  }
  if (pick.kind === 'unavailable') throw new EmailRetryLaterError(`connection_${pick.reason}`)
  if (variables) return { aliases: variables }
  logProblem('error', 'channel_not_configured', {
    channel: 'email',
    detail: 'EMAIL_MAILBOX_ALIASES is invalid (see the settings warning)',
  })
  throw new EmailRetryLaterError('channel_not_configured')
}

/** The outcome in SMTP: a temporary error (throw) for "retry", a bounce for "rejected". */
function answer(message: ForwardableEmailMessage, ctx: DeliveryContext, outcome: Outcome): void {
  if (outcome.decision === 'retry') {
    logOutcome(ctx, outcome, SMTP_TEMPORARY)
    throw new EmailRetryLaterError('origin_unavailable_or_inflight')
  }
  if (outcome.decision === 'rejected') {
    message.setReject(REJECT_REASONS.refused)
    logOutcome(ctx, outcome, SMTP_REJECTED)
    return
  }
  logOutcome(ctx, outcome, SMTP_ACCEPTED)
}

function reject(
  message: ForwardableEmailMessage,
  code: EmailParseErrorCode,
  startedAt: number,
): void {
  message.setReject(REJECT_REASONS[code])
  logDecision({
    channel: 'email',
    decision: 'rejected',
    decidedBy: 'gateway',
    status: SMTP_REJECTED,
    reason: code,
    ms: Date.now() - startedAt,
  })
}
