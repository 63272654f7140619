/**
 * The load generator's own process (forked by bench/load.ts): autocannon runs here, away from the
 * orchestrator, which also hosts the Upstash stand-in and the Neon proxy. Sharing one event loop
 * with those would make the client a bottleneck of what it measures.
 *
 * A job is a pool of pre-built requests; each connection takes the next unused one, so every
 * request goes out at most once, and each answer is recorded against its request (the checks need
 * to know which events were acknowledged, not only how many).
 * @module
 */
import autocannon from 'autocannon'
import type { LoadJob, LoadResult, LoadRunnerMessage } from './load'
import { runOpenLoop } from './open-loop'
import { summarize } from './stats'

interface Context {
  index: number
}

function run(job: LoadJob): Promise<LoadResult> {
  const pool = job.requests
  const statuses = new Array<number>(pool.length).fill(0)
  const latencies: number[] = []
  let cursor = 0
  let exhausted = 0
  let answered = 0
  let lastAnswerAt = 0
  const startedAt = performance.now()
  return new Promise((resolve, reject) => {
    const instance = autocannon<Context>(
      {
        url: job.url,
        connections: job.connections,
        duration: job.durationS,
        maxOverallRequests: pool.length,
        timeout: job.timeoutS,
        requests: [
          {
            setupRequest: (request, context) => {
              const index = cursor++
              const next = pool[index]
              context.index = index
              if (!next) {
                // Never reached while maxOverallRequests bounds each connection; if it were, send
                // a harmless request rather than a second copy of an event.
                exhausted++
                context.index = -1
                return { ...request, method: 'GET', path: '/__bench_pool_exhausted' }
              }
              return {
                ...request,
                method: next.method,
                path: next.path,
                headers: next.headers,
                body: next.body,
              }
            },
            onResponse: (status, _body, context) => {
              if (context.index >= 0) statuses[context.index] = status
              answered++
              lastAnswerAt = performance.now()
            },
          },
        ],
        initialContext: { index: -1 },
      },
      (err, result) => {
        if (err) {
          reject(err)
          return
        }
        // autocannon reports whole seconds from its start to its end; a step that ran out of
        // requests first ends at its last answer, timed here.
        const ranOut = cursor >= pool.length && answered > 0
        const durationS = ranOut
          ? (lastAnswerAt - startedAt) / 1000
          : Math.min(job.durationS, (performance.now() - startedAt) / 1000)
        resolve({
          id: job.id,
          statuses,
          latency: summarize(latencies),
          durationS,
          sent: cursor,
          errors: result.errors,
          timeouts: result.timeouts,
          statusCounts: Object.fromEntries(
            Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]),
          ),
          exhausted,
        })
      },
    )
    instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
      latencies.push(ms)
    })
  })
}

process.on('message', (message: LoadRunnerMessage) => {
  if (message.type !== 'job') return
  const job = message.job
  const running = job.openLoop ? runOpenLoop(job, job.openLoop.ratePerS) : run(job)
  running.then(
    (result) => process.send?.({ type: 'result', result }),
    (err: Error) => process.send?.({ type: 'error', id: message.job.id, message: err.message }),
  )
})

// The parent going away (crash, Ctrl-C) must not leave this process behind.
process.on('disconnect', () => process.exit(0))
process.send?.({ type: 'ready' })
