import { describe, expect, it } from 'vitest'
import { BodyOverLimitError, readBoundedBody } from '../../contract/body'

/** A body that streams `chunks` chunks of `size` bytes and records how many were pulled. */
function streamingRequest(chunks: number, size: number) {
  let pulled = 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled === chunks) return controller.close()
      pulled++
      controller.enqueue(new Uint8Array(size).fill(0x61))
    },
  })
  const request = new Request('https://g.example/', {
    method: 'POST',
    body,
    duplex: 'half',
  } as RequestInit)
  return { request, pulled: () => pulled }
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
})
