/**
 * An open-loop load (runs in the load generator's process, bench/load-runner.ts): request i goes
 * out at t0 + i / rate, whatever the answers, as a vendor's backfill does. A closed loop
 * (autocannon: each connection waits for its answer) slows down with the target and so hides
 * how far behind it falls (coordinated omission); here latency is measured from each request's
 * scheduled time, so a send delayed by a busy client counts against the target too.
 *
 * Backlog = requests scheduled but not answered yet. Connections are opened as needed (up to
 * {@link MAX_SOCKETS}), kept alive and reused. A target that falls too far behind does not hold
 * the run: at {@link openLoopDeadlineS} the loop stops waiting, cuts what is still in flight and
 * reports what it measured, the unanswered requests counted as such.
 * @module
 */
import { Agent, request } from 'node:http'
import { type LoadJob, type LoadResult, type OpenLoopStats, openLoopDeadlineS } from './load'
import { summarize } from './stats'

const MAX_SOCKETS = 1_024
/** How often the sender wakes up to send what is due (each wake-up sends all that is). */
const TICK_MS = 2

export function runOpenLoop(job: LoadJob, ratePerS: number): Promise<LoadResult> {
  const pool = job.requests
  const total = Math.min(pool.length, Math.floor(ratePerS * job.durationS))
  const statuses = new Array<number>(pool.length).fill(0)
  const latencies: number[] = []
  const answerMs = new Array<number>(total).fill(-1)
  const statusCounts: Record<string, number> = {}
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_SOCKETS })
  const target = new URL(job.url)
  let sent = 0
  let answered = 0
  let errors = 0
  let timeouts = 0
  let maxBacklog = 0
  let maxSendLagMs = 0
  const errorCodes: Record<string, number> = {}
  const backlogEverySecond: number[] = []
  const t0 = performance.now() + 50

  return new Promise((resolve) => {
    let lastAnswerAt = t0
    let finished = false
    let deadline: NodeJS.Timeout | undefined
    const finish = () => {
      if (finished) return
      finished = true
      clearTimeout(deadline)
      const unansweredAtDeadline = sent - answered - errors
      agent.destroy()
      const elapsedS = (Math.max(lastAnswerAt, t0) - t0) / 1000
      const stats: OpenLoopStats = {
        ratePerS,
        scheduled: total,
        sent,
        sendDurationS: round3(total / ratePerS),
        achievedRatePerS: Math.round(answered / Math.max(elapsedS, 1e-9)),
        maxBacklog,
        unansweredAtDeadline,
        backlogEverySecond,
        drainS: round3(Math.max(0, elapsedS - total / ratePerS)),
        maxSendLagMs: round3(maxSendLagMs),
        errorCodes,
        answerMs,
      }
      resolve({
        id: job.id,
        statuses,
        latency: summarize(latencies),
        durationS: elapsedS,
        sent,
        errors,
        timeouts,
        statusCounts,
        exhausted: 0,
        openLoop: stats,
      })
    }
    const settle = () => {
      if (sent === total && answered + errors === total) finish()
    }
    deadline = setTimeout(
      finish,
      Math.max(0, t0 - performance.now()) + openLoopDeadlineS(job) * 1000,
    )
    const send = (index: number, scheduledAt: number) => {
      const next = pool[index]
      if (!next) return
      const req = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          method: next.method,
          path: next.path,
          headers: { ...next.headers, 'content-length': Buffer.byteLength(next.body) },
          timeout: job.timeoutS * 1000,
        },
        (res) => {
          res.resume()
          res.on('end', () => {
            if (finished) return
            const now = performance.now()
            const status = res.statusCode ?? 0
            statuses[index] = status
            latencies.push(now - scheduledAt)
            answerMs[index] = Math.round(now - scheduledAt)
            statusCounts[status] = (statusCounts[status] ?? 0) + 1
            answered++
            lastAnswerAt = now
            settle()
          })
        },
      )
      req.on('timeout', () => {
        timeouts++
        req.destroy(new Error('timeout'))
      })
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (finished) return
        errors++
        const code = err.code ?? err.message.slice(0, 40)
        errorCodes[code] = (errorCodes[code] ?? 0) + 1
        lastAnswerAt = performance.now()
        settle()
      })
      req.end(next.body)
    }
    const tick = () => {
      const now = performance.now()
      const due = Math.min(total, Math.floor(((now - t0) / 1000) * ratePerS) + 1)
      while (sent < due) {
        const scheduledAt = t0 + (sent * 1000) / ratePerS
        maxSendLagMs = Math.max(maxSendLagMs, now - scheduledAt)
        send(sent, scheduledAt)
        sent++
      }
      if (finished) return
      const backlog = sent - answered - errors
      maxBacklog = Math.max(maxBacklog, backlog)
      const second = Math.floor((now - t0) / 1000)
      if (second >= backlogEverySecond.length && now >= t0) backlogEverySecond.push(backlog)
      if (sent < total) setTimeout(tick, TICK_MS)
      else settle()
    }
    setTimeout(tick, Math.max(0, t0 - performance.now()))
  })
}

const round3 = (n: number) => Math.round(n * 1000) / 1000
