/**
 * How a webhook channel answers a delivery's outcome over HTTP. Each channel brings what "got it"
 * and "send it again" look like to its vendor; the mapping from outcome to reply is the same for
 * all of them. (Email answers in SMTP instead: worker/email.ts.)
 * @module
 */
import type { Outcome } from '../outcome'

export interface ChannelReplies {
  /**
   * "Got it, do not send again": taken, a duplicate, queued, ignored, and also refused for good by
   * the origin (a retry loop helps no one and counts against the app's health with Slack).
   */
  ok(): Response
  /** "Not taken; send it again." Slack and Telegram retry on it; Twilio does not (the spool). */
  retryLater(): Response
}

/** The answer that makes Slack and Telegram deliver again (no `x-slack-no-retry`). */
export function retryLaterResponse(): Response {
  return Response.json(
    { error: { code: 'retry_later', message: 'temporarily unavailable, retry' } },
    { status: 503, headers: { 'retry-after': '1' } },
  )
}

/** An empty 200, or {@link retryLaterResponse}: what Slack and Telegram understand. */
export const plainReplies: ChannelReplies = {
  ok: () => new Response(null, { status: 200 }),
  retryLater: retryLaterResponse,
}

/**
 * The reply to a request's outcomes (one per delivery; a batch has several): "send it again" when
 * any item was not taken (the vendor resends the whole batch, whose taken items are duplicates
 * then), else "got it".
 */
export function httpReply(replies: ChannelReplies, outcomes: readonly Outcome[]): Response {
  const [first] = outcomes
  if (outcomes.length === 1 && first?.decision === 'challenge')
    return challengeReply(first.challenge)
  // Taken: forwarded, duplicate, recorded, ignored, queued, or refused for good (dead-lettered).
  const taken = outcomes.every((outcome) => outcome.decision !== 'retry')
  return taken ? replies.ok() : replies.retryLater()
}

/** A handshake's challenge, echoed as plain text. */
export function challengeReply(challenge: string): Response {
  return new Response(challenge, {
    headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-content-type-options': 'nosniff' },
  })
}
