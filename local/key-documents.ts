/**
 * A local stand-in for login.botframework.com: serves JSON documents (the OpenID metadata, its
 * JWKS), so a Worker verifies Teams tokens against keys minted here, fetched over HTTP as it
 * fetches Microsoft's. `send-webhook teams` serves the development key's documents with it while
 * it sends; the Teams tests put their own (`PUT /{path}`) and count the fetches
 * (`GET /hits/{path}`). `GET /{path}` serves a document, 404 until there is one. A test makes
 * a path fail as Microsoft's endpoint might (`PUT /fail/{path}` with `hang`, an HTTP status, or
 * `off` to serve again): `hang` never answers, as a host out of reach.
 * @module
 */
import { createServer, type IncomingMessage } from 'node:http'

export interface KeyDocumentServer {
  url: string
  close(): Promise<void>
}

export interface KeyDocumentOptions {
  /** Default: any free port. */
  port?: number
  /** Served from the start: path → JSON value. */
  documents?: Record<string, unknown>
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export async function startKeyDocuments(
  options: KeyDocumentOptions = {},
): Promise<KeyDocumentServer> {
  const documents = new Map(
    Object.entries(options.documents ?? {}).map(([path, value]) => [path, JSON.stringify(value)]),
  )
  const hits = new Map<string, number>()
  const failing = new Map<string, string>()
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://local').pathname
    if (req.method === 'PUT' && path.startsWith('/fail/')) {
      void bodyOf(req).then((mode) => {
        if (mode === 'off') failing.delete(path.slice('/fail'.length))
        else failing.set(path.slice('/fail'.length), mode)
        res.writeHead(204).end()
      })
      return
    }
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
    const failure = failing.get(path)
    if (failure === 'hang') return
    if (failure !== undefined) {
      res.writeHead(Number(failure) || 500).end()
      return
    }
    const document = documents.get(path)
    if (document === undefined) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(document)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', resolve)
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // A hanging answer would hold the close open.
        server.closeAllConnections()
      }),
  }
}
