/**
 * Reads a body with a hard byte bound, before any other work: a declared `content-length` over
 * the bound is refused at once, and a body without one (chunked) is counted while it streams and
 * abandoned the moment it passes the bound. The Worker reads vendor requests and the origin's
 * answers with it, the origin the Worker's forwards, its Gmail client Gmail's answers.
 *
 * What is abandoned is cancelled when it is an answer (a fetch Response: that frees its
 * connection) and left unread when it is a request: the runtime drops the rest once the answer is
 * sent, and a cancelled request body made `wrangler dev`'s proxy fail the next request with 503
 * "Your worker restarted mid-request" (cloudflare/workers-sdk#15709, #15203). A chunked request
 * over the bound still does, under `wrangler dev` only: its body was partly read
 * (docs/operations.md).
 * @module
 */
import type { Bytes } from './crypto'

/** Over the bound: nothing more was read. Each caller maps it to its own answer (413, ...). */
export class BodyOverLimitError extends Error {
  readonly code = 'body_too_large'
  constructor(
    readonly limitBytes: number,
    /** At least this many bytes (the declared length, or what had streamed in). */
    readonly seenBytes: number,
  ) {
    super(`body of at least ${seenBytes} bytes exceeds ${limitBytes}`)
    this.name = 'BodyOverLimitError'
  }
}

export interface RawBody {
  /** The exact bytes received: what vendor signatures are computed over. */
  bytes: Bytes
  /** The same bytes decoded as UTF-8 (invalid sequences replaced), for parsing after verification. */
  text: string
}

const decoder = new TextDecoder()

/** A fetch Response (it has a status), as opposed to a request someone sent us. */
function isAnswer(source: object): boolean {
  return 'status' in source
}

/** Takes a Request, or anything with its headers and body (a fetch Response: the Gmail poller). */
export async function readBoundedBody(
  request: Pick<Request, 'headers' | 'body'> & { arrayBuffer?: () => Promise<ArrayBuffer> },
  maxBytes: number,
): Promise<RawBody> {
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    // Not a byte of it is read.
    if (isAnswer(request)) await request.body?.cancel().catch(() => {})
    throw new BodyOverLimitError(maxBytes, Number(declared))
  }

  // With a declared length within the bound, HTTP framing already bounds the body: one native
  // read is cheaper than pulling chunks through a JS reader (about 14% of the Worker's CPU per
  // replay in the benchmark's A/B runs). The size is still checked after the read.
  // Not for encoded bodies: a fetch Response decompresses, so its declared length says nothing.
  // `body` is not touched first: on @hono/node-server (the origin) that getter builds a full
  // Request and stream, where `arrayBuffer()` reads the socket straight.
  const encoded = (request.headers.get('content-encoding') ?? 'identity') !== 'identity'
  if (declared !== null && /^\d+$/.test(declared) && !encoded && request.arrayBuffer) {
    const bytes = new Uint8Array(await request.arrayBuffer()) as Bytes
    if (bytes.byteLength > maxBytes) throw new BodyOverLimitError(maxBytes, bytes.byteLength)
    return { bytes, text: decoder.decode(bytes) }
  }
  if (!request.body) return { bytes: new Uint8Array(0) as Bytes, text: '' }

  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      if (isAnswer(request)) await reader.cancel().catch(() => {})
      else reader.releaseLock()
      throw new BodyOverLimitError(maxBytes, size)
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(size) as Bytes
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return { bytes, text: decoder.decode(bytes) }
}
