/**
 * A local stand-in for login.botframework.com: serves whatever JSON documents a test puts (the
 * OpenID metadata, its JWKS) and counts the GETs, so the Teams tests verify tokens against keys
 * they minted, fetched over HTTP as the Worker fetches Microsoft's. `PUT /{path}` stores a body,
 * `GET /{path}` serves it (404 until then), `GET /hits/{path}` says how many GETs it had.
 * @module
 */
import { createServer, type IncomingMessage } from 'node:http'

export interface KeyDocumentServer {
  url: string
  close(): Promise<void>
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export async function startKeyDocuments(): Promise<KeyDocumentServer> {
  const documents = new Map<string, string>()
  const hits = new Map<string, number>()
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://local').pathname
    if (req.method === 'PUT') {
      void bodyOf(req).then((body) => {
        documents.set(path, body)
        res.writeHead(204).end()
      })
      return
    }
    if (path.startsWith('/hits/')) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(hits.get(path.slice('/hits'.length)) ?? 0))
      return
    }
    hits.set(path, (hits.get(path) ?? 0) + 1)
    const document = documents.get(path)
    if (document === undefined) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(document)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
