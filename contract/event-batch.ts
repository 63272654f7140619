/**
 * A batch of events in one signed request (`POST /v1/events/batch`): the spool consumer forwards a
 * queue batch whole and the origin ingests it in one database round trip. The request is
 * `{events: [...]}`; the answer `{results: [...]}`, one per event in the same order, each the
 * status and JSON single ingest (`POST /v1/events`) would have answered for that event alone.
 * @module
 */
import type { IngestResult } from './event'

export const BATCH_LIMITS = {
  /** Events per request: Cloudflare's largest queue batch. */
  events: 100,
  /** The request's JSON, in UTF-8 bytes: several events of the largest size fit. */
  bytes: 1024 * 1024,
} as const

/** One event's answer inside a batch answer. */
export type BatchItemAnswer =
  | ({ status: 200 | 201 } & IngestResult)
  | { status: number; error: { code: string; message: string } }

export interface BatchAnswer {
  results: BatchItemAnswer[]
}

/** Splits serialized events into request bodies within {@link BATCH_LIMITS}, in order. */
export function packBatches(events: readonly string[]): string[][] {
  const batches: string[][] = []
  let current: string[] = []
  let bytes = 0
  const encoder = new TextEncoder()
  for (const event of events) {
    const size = encoder.encode(event).byteLength + 1
    if (
      current.length > 0 &&
      (current.length >= BATCH_LIMITS.events || bytes + size > BATCH_LIMITS.bytes - 16)
    ) {
      batches.push(current)
      current = []
      bytes = 0
    }
    current.push(event)
    bytes += size
  }
  if (current.length > 0) batches.push(current)
  return batches
}

/** The request body of serialized events. */
export function batchBody(events: readonly string[]): string {
  return `{"events":[${events.join(',')}]}`
}
