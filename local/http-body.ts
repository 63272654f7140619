/**
 * The body of a request to one of our own Node HTTP servers (the Upstash stand-in, the tests'
 * fake origin, fake Gmail and downstream), read to the end as UTF-8 and bounded: a larger body
 * fails the read and the request is destroyed.
 * @module
 */
import type { IncomingMessage } from 'node:http'

export function readBody(req: IncomingMessage, maxBytes = 16 * 1024 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        reject(new Error(`body over ${maxBytes} bytes`))
        req.destroy()
        return
      }
      chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}
