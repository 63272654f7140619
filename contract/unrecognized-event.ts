/**
 * An unrecognized event: a verified delivery the channel's classifier could not place (an event
 * type it does not know, a message of a shape it has not seen), kept whole instead of answered
 * "ignored". The Worker sends it as a dead letter (SPOOL_DEAD, as refused events go), the origin
 * keeps it in `channel_failures`, and a replay hands it back to the Worker's signed route
 * `POST /internal/unrecognized/replay`, which parses and classifies the stored body again with
 * the code it runs then: once that code knows the event, it is delivered like any other.
 *
 * Both wings read it: the Worker writes and replays it, the origin tells it from a normalized
 * event by its `kind` and passes it back untouched.
 * @module
 */
import * as v from 'valibot'
import { EventConnectionSchema } from './connection'
import { CHANNEL_NAME, jsonBytes, LIMITS } from './event'
import { storableText } from './storable'

export const UNRECOGNIZED_KIND = 'unrecognized'

/** The Worker's route that classifies a kept event again (signed like a forward, route-bound). */
export const UNRECOGNIZED_REPLAY_ROUTE = {
  method: 'POST',
  path: '/internal/unrecognized/replay',
} as const

/** The error text of its dead letter, and the prefix the console and the CLI show. */
export const UNRECOGNIZED_ERROR = 'unrecognized_event'

const Key = v.pipe(v.string(), v.minLength(1), v.maxLength(LIMITS.key))

export const UnrecognizedEventSchema = v.pipe(
  v.strictObject({
    v: v.literal(1),
    kind: v.literal(UNRECOGNIZED_KIND),
    /** The webhook channel that received it (`whatsapp-cloud`, `line`, ...). */
    channel: v.pipe(v.string(), v.regex(CHANNEL_NAME)),
    /** `dedup:unrecognized:{channel}:{tenant}:h{hash of the body}`: one failure row per body. */
    deliveryKey: Key,
    /** Why the classifier could not place it (its reason code). */
    reason: v.pipe(v.string(), v.maxLength(128)),
    /** The tenant whose secret verified it at first receipt, and what it vouched for. */
    tenant: v.nullable(Key),
    scopes: v.optional(v.pipe(v.array(Key), v.maxLength(10_000))),
    writesFor: v.optional(v.pipe(v.array(Key), v.maxLength(10_000))),
    /** The registry's connection that verified it (absent: the variables): a replay needs it active. */
    connection: v.optional(EventConnectionSchema),
    /** The request's path and query (no host, no credentials): what `parse` may read of the URL. */
    path: v.pipe(v.string(), v.maxLength(LIMITS.url)),
    contentType: v.nullable(v.pipe(v.string(), v.maxLength(LIMITS.name))),
    /** What `parse` reads: the text, or its UTF-8 bytes in base64 when Postgres cannot hold it. */
    body: v.string(),
    encoding: v.picklist(['text', 'base64']),
    /** Epoch ms of the first receipt. */
    receivedAt: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  }),
  v.check((event) => jsonBytes(event) <= LIMITS.eventBytes, 'event too large'),
)
export type UnrecognizedEvent = v.InferOutput<typeof UnrecognizedEventSchema>

/** Whether a stored event is an unrecognized one (the origin's dispatch; validated later). */
export function isUnrecognizedEvent(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === UNRECOGNIZED_KIND
  )
}

export type UnrecognizedParse =
  | { ok: true; event: UnrecognizedEvent }
  | { ok: false; message: string }

/** Validates a stored unrecognized event; the message names the field, never a value. */
export function parseUnrecognizedEvent(input: unknown): UnrecognizedParse {
  const result = v.safeParse(UnrecognizedEventSchema, input)
  if (result.success) return { ok: true, event: result.output }
  const issue = result.issues[0]
  const path = issue?.path?.map((p) => String(p.key)).join('.') || '(root)'
  return { ok: false, message: `invalid unrecognized event: ${path}` }
}

/** The body as kept: its text when Postgres can hold it as it is, else its bytes in base64. */
export function keptBody(text: string): Pick<UnrecognizedEvent, 'body' | 'encoding'> {
  if (storableText(text) === text) return { body: text, encoding: 'text' }
  const bytes = new TextEncoder().encode(text)
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return { body: btoa(binary), encoding: 'base64' }
}

/** The body's text again, as first received. */
export function bodyText(event: Pick<UnrecognizedEvent, 'body' | 'encoding'>): string {
  if (event.encoding === 'text') return event.body
  const binary = atob(event.body)
  return new TextDecoder().decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)))
}

/** What the replay route answers: delivered now, still not placed, or not taken (retry later). */
export interface UnrecognizedReplayAnswer {
  outcome: 'delivered' | 'unrecognized' | 'retry'
  /** Each delivery's decision (forwarded, duplicate, recorded, ignored, ...), in order. */
  decisions: string[]
  /** Why it is still unrecognized, or not taken. */
  reason?: string
}
