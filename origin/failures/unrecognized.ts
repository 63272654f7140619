/**
 * The replay of a kept unrecognized event (contract/unrecognized-event.ts): an inbound failure
 * whose event the Worker's code could not place when it arrived. Only the Worker's code can
 * classify it, so the origin hands it back to the Worker's signed route (`GATEWAY_URL` +
 * `POST /internal/unrecognized/replay`, signed with ORIGIN_SHARED_SECRET like every forward,
 * method- and route-bound), which parses and classifies it with the code it runs now and
 * delivers what it places through the ordinary delivery core (back to this origin's
 * `POST /v1/events`). Only the Worker's signed answer counts; the row is resolved once it says
 * `delivered`, and stays dead, saying why, otherwise.
 * @module
 */

import {
  ANSWER_SIGNATURE_HEADER,
  ORIGIN_SHARED_SECRET,
  SIGNATURE_HEADER,
  signForward,
  verifyAnswer,
} from '../../contract/forward-signature'
import {
  UNRECOGNIZED_REPLAY_ROUTE,
  type UnrecognizedReplayAnswer,
} from '../../contract/unrecognized-event'
import { readBoundedBody } from '../../shared/body'
import { secretList } from '../../shared/crypto'
import { NO_REDIRECT } from '../../shared/no-redirect'
import { readUrl } from '../../shared/settings'
import { GATEWAY_URL, type OriginEnv } from '../config'
import type { Queryable } from '../db'
import { type DeadInboundFailure, resolveInboundFailure } from './inbound'

/** The Worker's answer is a small JSON object. */
const MAX_ANSWER_BYTES = 16 * 1024
/** The replay waits for a whole delivery (the Worker forwards back to an origin): bounded. */
const REPLAY_TIMEOUT_MS = 30_000

/** Where and how to reach the Worker's replay route. */
export interface GatewayReplay {
  url: string
  /** ORIGIN_SHARED_SECRET: the first signs, every one verifies the Worker's answer. */
  secrets: readonly string[]
  timeoutMs: number
}

/** Why an unrecognized row cannot be replayed by this process (its settings), or null. */
export const NO_GATEWAY =
  "GATEWAY_URL and ORIGIN_SHARED_SECRET are not set: an unrecognized event is replayed by the Worker's code"

/** The replay's settings from the environment; null without GATEWAY_URL or a shared secret. */
export function gatewayReplayOf(env: OriginEnv, warnings: string[] = []): GatewayReplay | null {
  const url = readUrl(env, GATEWAY_URL, warnings)
  return url ? gatewayReplay(url, secretList(env[ORIGIN_SHARED_SECRET.name])) : null
}

/** The replay's settings of a configured origin (its GATEWAY_URL and shared secrets). */
export function gatewayReplay(url: string, secrets: readonly string[]): GatewayReplay | null {
  if (secrets.length === 0) return null
  return { url: url.replace(/\/+$/, ''), secrets, timeoutMs: REPLAY_TIMEOUT_MS }
}

export type UnrecognizedReplay =
  /** Placed and delivered now; the row is resolved. */
  | { outcome: 'resolved'; decisions: string[] }
  /** Another replay resolved it first. */
  | { outcome: 'claim_lost'; decisions: string[] }
  /** The Worker's code still cannot place it (or refuses it now): the row stays dead. */
  | { outcome: 'still_unrecognized'; reason: string }
  /** The Worker did not answer, or not in its own name, or could not deliver it all: try later. */
  | { outcome: 'failed'; error: string }

/** One replay of an unrecognized row through the Worker. Database errors propagate. */
export async function replayUnrecognized(
  db: Queryable,
  gateway: GatewayReplay,
  failure: DeadInboundFailure,
): Promise<UnrecognizedReplay> {
  const answer = await askGateway(gateway, JSON.stringify({ event: failure.event }))
  if ('error' in answer) return { outcome: 'failed', error: answer.error }
  if (answer.outcome === 'unrecognized') {
    return { outcome: 'still_unrecognized', reason: answer.reason ?? 'unrecognized' }
  }
  if (answer.outcome !== 'delivered') {
    return { outcome: 'failed', error: `not taken (${answer.decisions.join(', ')})` }
  }
  return (await resolveInboundFailure(db, failure.id, null))
    ? { outcome: 'resolved', decisions: answer.decisions }
    : { outcome: 'claim_lost', decisions: answer.decisions }
}

/** The Worker's signed answer, or why there is none (never followed: a redirect is a failure). */
async function askGateway(
  gateway: GatewayReplay,
  body: string,
): Promise<UnrecognizedReplayAnswer | { error: string }> {
  const [secret] = gateway.secrets
  if (!secret) return { error: 'no ORIGIN_SHARED_SECRET' }
  const headers = await signForward(secret, body, undefined, UNRECOGNIZED_REPLAY_ROUTE)
  let response: Response
  try {
    response = await fetch(`${gateway.url}${UNRECOGNIZED_REPLAY_ROUTE.path}`, {
      method: UNRECOGNIZED_REPLAY_ROUTE.method,
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(gateway.timeoutMs),
      ...NO_REDIRECT,
    })
  } catch (err) {
    return { error: `the Worker did not answer (${(err as Error).name})` }
  }
  const text = await readBoundedBody(response, MAX_ANSWER_BYTES).then(
    (raw) => raw.text,
    () => null,
  )
  const signed =
    text !== null &&
    (await verifyAnswer(
      gateway.secrets,
      headers[SIGNATURE_HEADER] ?? '',
      response.status,
      text,
      response.headers.get(ANSWER_SIGNATURE_HEADER),
    ))
  if (!signed || response.status !== 200) {
    return { error: `the Worker answered ${response.status}${signed ? '' : ' (not signed)'}` }
  }
  try {
    const answer = JSON.parse(text) as UnrecognizedReplayAnswer
    return Array.isArray(answer.decisions) ? answer : { error: 'the Worker answered no outcome' }
  } catch {
    return { error: 'the Worker answered no JSON' }
  }
}
