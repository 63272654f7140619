import { describe, expect, it } from 'vitest'
import { BodyOverLimitError, readBoundedBody } from '../../shared/body'

/** A body that streams `chunks` chunks of `size` bytes and records how many were pulled. */
function streamingBody(chunks: number, size: number) {
  let pulled = 0
  let cancelled = false
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (pulled === chunks) return controller.close()
        pulled++
        controller.enqueue(new Uint8Array(size).fill(0x61))
      },
      cancel() {
        cancelled = true
      },
      // Nothing pulled ahead: every pull is a read.
    },
    { highWaterMark: 0 },
  )
  return { body, pulled: () => pulled, cancelled: () => cancelled }
}

function streamingRequest(chunks: number, size: number) {
  const stream = streamingBody(chunks, size)
  const request = new Request('https://g.example/', {
    method: 'POST',
    body: stream.body,
    duplex: 'half',
  } as RequestInit)
  return { request, ...stream }
}

describe('bounded body', () => {
  it('returns the exact bytes and their text', async () => {
    const request = new Request('https://g.example/', { method: 'POST', body: 'héllo' })
    const body = await readBoundedBody(request, 100)
    expect([...body.bytes]).toEqual([...new TextEncoder().encode('héllo')])
    expect(body.text).toBe('héllo')
  })

  it('refuses a declared content-length over the bound without reading', async () => {
    const { request, pulled } = streamingRequest(10, 10)
    request.headers.set('content-length', '100')
    await expect(readBoundedBody(request, 50)).rejects.toBeInstanceOf(BodyOverLimitError)
    expect(pulled()).toBe(0)
  })

  it('stops a stream without a length as soon as it passes the bound', async () => {
    const { request, pulled } = streamingRequest(1000, 100)
    await expect(readBoundedBody(request, 250)).rejects.toBeInstanceOf(BodyOverLimitError)
    expect(pulled()).toBeLessThan(10)
  })

  it('accepts a body of exactly the bound', async () => {
    const { request } = streamingRequest(5, 10)
    expect((await readBoundedBody(request, 50)).bytes.length).toBe(50)
  })

  // Cancelling a request's body made wrangler dev's proxy answer the next request 503 "Your worker
  // restarted mid-request" (cloudflare/workers-sdk#15709): the runtime drops what was not read.
  it('a request over the bound is left unread, never cancelled', async () => {
    const declared = streamingRequest(10, 10)
    declared.request.headers.set('content-length', '100')
    await expect(readBoundedBody(declared.request, 50)).rejects.toBeInstanceOf(BodyOverLimitError)
    const streamed = streamingRequest(1000, 100)
    await expect(readBoundedBody(streamed.request, 250)).rejects.toBeInstanceOf(BodyOverLimitError)
    for (const { cancelled } of [declared, streamed]) expect(cancelled()).toBe(false)
  })

  it('an answer over the bound is cancelled, which frees its connection', async () => {
    for (const length of ['100', null]) {
      const stream = streamingBody(1000, 100)
      const headers = length ? { 'content-length': length } : undefined
      const answer = new Response(stream.body, { headers })
      await expect(readBoundedBody(answer, 50)).rejects.toBeInstanceOf(BodyOverLimitError)
      expect(stream.cancelled()).toBe(true)
    }
  })
})
