/**
 * The bench's open loop (bench/open-loop.ts) against a target that never finishes its answers:
 * a server that sends its headers and then a byte of body now and then, forever, so no request
 * times out and none ends. The loop stops waiting at its deadline and reports what it measured,
 * every request unanswered, instead of holding the run until something outside it gives up.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type LoadJob, openLoopDeadlineS } from '../../bench/load'
import { runOpenLoop } from '../../bench/open-loop'

let server: Server
let url: string
const trickles = new Set<NodeJS.Timeout>()

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'text/plain' })
    const timer = setInterval(() => res.write('.'), 200)
    trickles.add(timer)
    res.on('close', () => {
      clearInterval(timer)
      trickles.delete(timer)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  for (const timer of trickles) clearInterval(timer)
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

it('a target still answering at the deadline: the loop ends then, its requests unanswered', async () => {
  const job: LoadJob = {
    id: 1,
    url,
    requests: Array.from({ length: 5 }, () => ({
      method: 'POST' as const,
      path: '/webhooks/slack',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })),
    connections: 0,
    durationS: 1,
    timeoutS: 1,
    openLoop: { ratePerS: 5 },
  }
  const started = performance.now()
  const result = await runOpenLoop(job, 5)
  const tookS = (performance.now() - started) / 1000
  expect(result.sent).toBe(5)
  expect(result.openLoop?.unansweredAtDeadline).toBe(5)
  expect(result.statuses).toEqual([0, 0, 0, 0, 0])
  expect(tookS).toBeGreaterThanOrEqual(openLoopDeadlineS(job) - 0.5)
  expect(tookS).toBeLessThan(openLoopDeadlineS(job) + 5)
}, 30_000)
