/**
 * One hand-off of one outbox row to the downstream consumer: `POST DOWNSTREAM_URL` with the row
 * as JSON and `Idempotency-Key: outbox-{id}`. The key is the same on every attempt (first try,
 * retries, a manual replay), so a downstream that honours it applies each row once even when an
 * answer got lost and the row was sent again.
 *
 * Any 2xx is success. Anything else (status, a redirect: never followed, shared/no-redirect.ts;
 * timeout, network) is a failure whose text is safe to store and print: the status or the error's
 * code, never the URL (it may carry a token in its query), never the response body.
 * @module
 */
import { isRedirect, NO_REDIRECT } from '../../shared/no-redirect'
import type { DownstreamConfig } from './config'

export interface OutboxRow {
  id: string
  messageId: string
  topic: string
  payload: unknown
  createdAt: string
}

export type HandOffResult = { ok: true; status: number } | { ok: false; error: string }

export function idempotencyKey(outboxId: string): string {
  return `outbox-${outboxId}`
}

export async function handOff(
  downstream: DownstreamConfig,
  row: OutboxRow,
): Promise<HandOffResult> {
  const body = JSON.stringify({
    outboxId: row.id,
    topic: row.topic,
    messageId: row.messageId,
    createdAt: row.createdAt,
    payload: row.payload,
  })
  const signal = AbortSignal.timeout(downstream.timeoutMs)
  try {
    const response = await fetch(downstream.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey(row.id),
      },
      body,
      signal,
      ...NO_REDIRECT,
    })
    // The status decides; the body is not needed (and not stored: it could echo anything).
    await response.body?.cancel().catch(() => {})
    if (response.ok) return { ok: true, status: response.status }
    if (isRedirect(response.status)) {
      return {
        ok: false,
        error: `downstream answered HTTP ${response.status} (redirect, not followed)`,
      }
    }
    return { ok: false, error: `downstream answered HTTP ${response.status}` }
  } catch (err) {
    if (signal.aborted) {
      return { ok: false, error: `downstream did not answer within ${downstream.timeoutMs} ms` }
    }
    return { ok: false, error: `downstream unreachable (${errorCode(err)})` }
  }
}

/** `ECONNREFUSED`, `ENOTFOUND`, ... from undici's `fetch failed` cause; else the error's name. */
function errorCode(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause
  if (typeof cause?.code === 'string' && /^[A-Z0-9_]{2,40}$/.test(cause.code)) return cause.code
  return err instanceof Error ? err.name : 'unknown error'
}
