/**
 * The origin's half of contract/forward-signature.ts: a forward's exact bytes verified (for its
 * method and route) before anything parses them, and the answer to a verified forward signed on
 * the JSON text it is sent as. The Worker counts a forward as taken only on an answer signed
 * here: a login page, a proxy's page or a redirect's target is not the origin's answer.
 *
 * The answer is built as a string, signed, and handed to `@hono/node-server` as that string with
 * its headers as a plain object: it writes both straight to the socket. Reading a finished
 * Response back (`clone().text()`) would make it build a web stream and tee it for every answer,
 * and a `Headers` object is read back entry by entry.
 * @module
 */
import type { Context, HonoRequest } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import {
  ANSWER_SIGNATURE_HEADER,
  type ForwardRoute,
  SIGNATURE_HEADER,
  signAnswer,
  TIMESTAMP_HEADER,
  verifyForward,
} from '../contract/forward-signature'
import { BodyOverLimitError, readBoundedBody } from '../shared/body'
import { BodyTooLargeError, UnauthorizedError } from './errors'
import type { Logger } from './log'

/** Set on a request whose signature verified: its answer, error or not, is signed with it. */
interface Verified {
  secret: string
  requestSignature: string
}

export type ForwardEnv = { Variables: { verified?: Verified } }

export interface ForwardAuthDeps {
  /** ORIGIN_SHARED_SECRET as a list: every entry verifies (rotation). */
  secrets: readonly string[]
  logger: Logger
  /** Clock in unix seconds, for the signature's freshness window. */
  nowSeconds: () => number
}

/**
 * The exact bytes of a forward, at most `maxBytes`, verified for this method and route: nothing is
 * parsed for an unauthenticated caller. Marks the request verified, so its answer is signed.
 */
export async function verifiedBody(
  deps: ForwardAuthDeps,
  c: Context<ForwardEnv>,
  route: ForwardRoute,
  maxBytes: number,
): Promise<string> {
  const raw = await boundedText(c.req, maxBytes)
  const requestSignature = c.req.header(SIGNATURE_HEADER)
  const verdict = await verifyForward(
    deps.secrets,
    route,
    raw,
    { timestamp: c.req.header(TIMESTAMP_HEADER), signature: requestSignature },
    deps.nowSeconds(),
  )
  if (!verdict.ok) {
    deps.logger.warn('request rejected', { reason: verdict.reason })
    throw new UnauthorizedError()
  }
  c.set('verified', { secret: verdict.secret, requestSignature: requestSignature as string })
  return raw
}

/**
 * `value` as a JSON answer; to a verified forward, signed for its request, status and these exact
 * bytes. Every answer of the signed routes goes through here, their errors too (onError).
 */
export async function answerJson(
  c: Context<ForwardEnv>,
  value: unknown,
  status: ContentfulStatusCode,
): Promise<Response> {
  const verified = c.get('verified')
  // Any other request (an operator's, the console's) answers through the context, with whatever
  // headers its route set on it.
  if (!verified) return c.json(value, status)
  const text = JSON.stringify(value)
  const signature = await signAnswer(verified.secret, verified.requestSignature, status, text)
  // Not c.body(): with two headers it builds a Headers object. The Worker's routes set no header
  // on the context for this answer to carry.
  return new Response(text, {
    status,
    headers: { 'content-type': 'application/json', [ANSWER_SIGNATURE_HEADER]: signature },
  })
}

/** The body as text, at most `maxBytes` (shared/body.ts); over it, a 413. */
async function boundedText(req: HonoRequest, maxBytes: number): Promise<string> {
  try {
    return (await readBoundedBody(req.raw, maxBytes)).text
  } catch (err) {
    if (err instanceof BodyOverLimitError) throw new BodyTooLargeError(maxBytes)
    throw err
  }
}
