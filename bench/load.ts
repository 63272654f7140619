/**
 * The orchestrator's handle on the load generator process (bench/load-runner.ts): one long-lived
 * child, one job at a time, each bounded in time. {@link LoadGenerator.stop} ends it.
 * @module
 */
import { type ChildProcess, fork } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { REPO_ROOT } from '../local/stack'
import type { WireRequest } from './requests'
import type { LatencySummary } from './stats'

export interface LoadJob {
  id: number
  /** Origin of the target, e.g. http://127.0.0.1:8787 (paths come from the requests). */
  url: string
  /** Sent at most once each, in order; the pool size bounds the step's request count. */
  requests: WireRequest[]
  connections: number
  durationS: number
  /** Seconds before a request counts as timed out. */
  timeoutS: number
  /**
   * Open loop (bench/open-loop.ts): `ratePerS` requests a second for `durationS`, whatever the
   * answers, latency from each request's scheduled time. Absent: autocannon's closed loop.
   */
  openLoop?: { ratePerS: number }
}

/**
 * How long an open loop waits for its last answer, from its first send: three times its sending
 * time (a target at a third of the offered rate answers its last request after three durations)
 * plus one request timeout. Past it the step ends unfinished, with what it measured.
 */
export function openLoopDeadlineS(job: Pick<LoadJob, 'durationS' | 'timeoutS'>): number {
  return 3 * job.durationS + job.timeoutS
}

/** What an open-loop step measured beyond a closed loop's figures. */
export interface OpenLoopStats {
  ratePerS: number
  scheduled: number
  sent: number
  /** scheduled ÷ rate: how long sending took by the schedule. */
  sendDurationS: number
  /** Answers (any status) per second, from the first scheduled send to the last answer. */
  achievedRatePerS: number
  /** Most requests sent and not answered at once. */
  maxBacklog: number
  /**
   * Requests still unanswered when the loop stopped waiting ({@link openLoopDeadlineS}): the step
   * did not finish. 0 when every request was answered or failed.
   */
  unansweredAtDeadline: number
  /** Requests sent and not answered, once a second while sending. */
  backlogEverySecond: number[]
  /** Seconds from the last scheduled send to the last answer. */
  drainS: number
  /** The latest a send left after its scheduled time (the load generator's own lag). */
  maxSendLagMs: number
  /** Socket errors by code (ECONNRESET, a timeout's message, ...). */
  errorCodes: Record<string, number>
  /** Each request's answer time from its scheduled time (index i was due at i ÷ rate s); -1: none. */
  answerMs: number[]
}

export interface LoadResult {
  id: number
  /** The answer's status for each request of the pool; 0 = not answered (unsent, cut off, timeout). */
  statuses: number[]
  latency: LatencySummary
  /**
   * Seconds from the first request to the end: the configured duration for a step that ran it
   * out, the time to the last answer for one that ran out of requests first.
   */
  durationS: number
  /** Requests taken from the pool (sent). */
  sent: number
  /** Connection errors and timeouts (autocannon's `errors` includes `timeouts`). */
  errors: number
  timeouts: number
  statusCounts: Record<string, number>
  /** Requests asked for after the pool ran out (should stay 0). */
  exhausted: number
  openLoop?: OpenLoopStats
}

export type LoadRunnerMessage = { type: 'job'; job: LoadJob }
type RunnerReply =
  | { type: 'ready' }
  | { type: 'result'; result: LoadResult }
  | { type: 'error'; id: number; message: string }

const RUNNER = join(dirname(fileURLToPath(import.meta.url)), 'load-runner.ts')

export class LoadGenerator {
  private nextId = 1
  private pending = new Map<
    number,
    { resolve: (r: LoadResult) => void; reject: (e: Error) => void }
  >()

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (reply: RunnerReply) => {
      if (reply.type === 'ready') return
      const id = reply.type === 'result' ? reply.result.id : reply.id
      const waiter = this.pending.get(id)
      if (!waiter) return
      this.pending.delete(id)
      if (reply.type === 'result') waiter.resolve(reply.result)
      else waiter.reject(new Error(`load generator: ${reply.message}`))
    })
    child.on('exit', (code, signal) => {
      for (const waiter of this.pending.values()) {
        waiter.reject(new Error(`load generator exited (${signal ?? `code ${code}`})`))
      }
      this.pending.clear()
    })
  }

  /** Forks the runner and waits (at most 30 s) for it to say it is ready. */
  static async start(): Promise<LoadGenerator> {
    const child = fork(RUNNER, [], {
      cwd: REPO_ROOT,
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // Structured clone: the request pools are tens of MB, cheaper than JSON.
      serialization: 'advanced',
    })
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new Error('load generator did not start within 30 s'))
      }, 30_000)
      child.once('message', () => {
        clearTimeout(timer)
        resolve()
      })
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`load generator exited at start (code ${code})`))
      })
    })
    return new LoadGenerator(child)
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  /**
   * Runs one job; rejects if it has not finished 30 s past its own bound (a closed loop: its
   * duration and one request timeout; an open loop: {@link openLoopDeadlineS}, where it stops by
   * itself): only a load generator that no longer answers gets there.
   */
  run(job: Omit<LoadJob, 'id'>): Promise<LoadResult> {
    const id = this.nextId++
    const ownS = job.openLoop ? openLoopDeadlineS(job) : job.durationS + job.timeoutS
    const boundMs = (ownS + 30) * 1000
    return new Promise<LoadResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`load step did not finish within ${boundMs} ms`))
      }, boundMs)
      this.pending.set(id, {
        resolve: (result) => {
          clearTimeout(timer)
          resolve(result)
        },
        reject: (err) => {
          clearTimeout(timer)
          reject(err)
        },
      })
      this.child.send({ type: 'job', job: { ...job, id } } satisfies LoadRunnerMessage)
    })
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()))
    this.child.disconnect()
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3_000)
    await exited
    clearTimeout(timer)
  }
}
