/**
 * The fault matrix (issue 5): the real stack (Worker bundle in workerd, origin processes behind a
 * balancer, Upstash stand-in on a private redis-server, Neon proxy on a private Postgres), one
 * real fault per case, vendor deliveries with each vendor's own retry behaviour (compressed in
 * time), heal, let the spool queue settle, then the invariant against Postgres: every logical message is
 * exactly one message row and one outbox row, nothing forged wrote anything.
 *
 * The table at the end (written to test/faults/results.md by `npm run test:faults`) has, per case: messages,
 * deliveries, how many were made while the fault was in effect, answered 2xx / 4xx, rows, how
 * many messages never got a 2xx (their vendor gave up), how many went through the spool queue,
 * were dead-lettered, and were replayed from channel_failures by the operator, lost, doubled.
 * Lost and doubled must be 0.
 */
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { resolve } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { delay } from '../../local/processes'
import { runId } from '../../local/services'
import { REPO_ROOT } from '../../local/stack'
import { type DeadFailure, FaultCase } from './support/fault-case'
import { type FaultStack, SPOOL_SETTINGS, startFaultStack } from './support/fault-stack'
import { type CaseResult, formatTable } from './support/ledger'
import { CHANNELS, is2xx, type Message } from './support/vendors'

const RUN = runId().slice(-6)
/** How long an origin or Postgres outage lasts: longer than Slack's whole (compressed) retry span. */
const OUTAGE_MS = 7_000
const CASE_TIMEOUT_MS = 120_000

let stack: FaultStack
const results: CaseResult[] = []
const suiteStartedAt = Date.now()
let caseNo = 0
let casesDefined = 0

beforeAll(async () => {
  stack = await startFaultStack()
}, 180_000)

afterAll(async () => {
  await stack?.stop()
  report(results)
}, 60_000)

/**
 * A case: `body` injects its fault and heals it (in a `finally`: a later case must find the stack
 * whole), then the deliveries settle, the spool queue settles and the invariant is checked.
 */
function faultCase(
  name: string,
  body: (c: FaultCase) => Promise<void>,
  expectations: { fault: boolean } = { fault: true },
): void {
  casesDefined++
  it(
    name,
    async () => {
      await stack.heal()
      const c = new FaultCase(stack, name, ++caseNo, RUN)
      await body(c)
      const result = await c.finish()
      results.push(result)
      const explain = explanation(c, result)
      if (expectations.fault) expect(result.inFault, 'the fault was in effect').toBeGreaterThan(0)
      expect(
        {
          lost: result.lost,
          doubled: result.doubled,
          forgedLeaks: result.forgedLeaks,
          problems: result.problems.length,
        },
        explain,
      ).toEqual({ lost: 0, doubled: 0, forgedLeaks: 0, problems: 0 })
    },
    CASE_TIMEOUT_MS,
  )
}

/** Waits out what is left of `ms` since `since`. */
const until = (since: number, ms: number) => delay(Math.max(0, since + ms - Date.now()))

faultCase('Redis stopped', async (c) => {
  const before = c.fresh(10)
  await c.send(before, { gapMs: 50 })
  let during: Message[] = []
  await c.during(async () => {
    await stack.redis.kill()
    try {
      during = c.fresh(15)
      await c.send([...during, ...c.forged()], { gapMs: 100 })
      await c.send(before, { gapMs: 30 })
      await delay(1_000)
    } finally {
      await stack.redis.start()
    }
  })
  // Back, and empty: every claim is gone, Postgres alone knows what was taken.
  await c.send([...before, ...during], { gapMs: 20 })
  await c.send(c.fresh(5), { gapMs: 50 })
})

faultCase('Redis slower than its budget', async (c) => {
  const before = c.fresh(5)
  await c.send(before, { gapMs: 50 })
  await c.during(async () => {
    stack.redisLayer.setLatency(1_000)
    try {
      const during = c.fresh(15)
      await c.send([...during, ...c.forged()], { gapMs: 100 })
      await c.send([...before, ...during.slice(0, 8)], { gapMs: 50 })
      await delay(1_500)
    } finally {
      stack.redisLayer.setLatency(0)
    }
  })
  await c.send(
    c.messages.filter((m) => !m.forged),
    { gapMs: 20 },
  )
})

faultCase('Redis flushed mid-run', async (c) => {
  const first = c.fresh(20)
  const sending = c.send([...first, ...c.forged()], { gapMs: 50 })
  await delay(500)
  await c.during(async () => {
    await stack.redis.flushAll()
    await sending
    // Replays of everything: Redis has forgotten the first half, in flight or done.
    await c.send(first, { gapMs: 20 })
  })
  await c.send(c.fresh(5), { gapMs: 50 })
})

faultCase('origin stopped, then restarted', async (c) => {
  const before = await originOutage(c, { signal: 'SIGTERM' }, async () => {
    await c.send([...c.fresh(15), ...c.forged()], { gapMs: 250 })
  })
  await c.send([...c.fresh(5), ...before], { gapMs: 50 })
})

faultCase('origin slow, not down (answers in 5 s)', async (c) => {
  const before = c.fresh(5)
  await c.send(before, { gapMs: 50 })
  await c.settle()
  let during: Message[] = []
  await c.during(async () => {
    // The origin takes each event (its rows commit) but its answer comes after 5 s, past every
    // forward budget: the first forwards time out; once a few have been waiting for a second,
    // the Worker sheds: first-seen events go straight to the spool queue (worker/shed/).
    stack.balancer.setAnswerDelay(5_000)
    try {
      during = c.fresh(25)
      await c.send([...during, ...c.forged()], { gapMs: 200 })
      await c.send(before, { gapMs: 30 })
      await c.settle()
    } finally {
      stack.balancer.setAnswerDelay(0)
    }
  })
  // Every vendor answered 2xx at its first attempt, within the shortest deadline (Slack's 3 s),
  // and most without waiting for the origin at all.
  const attempts = during.flatMap((m) => m.attempts)
  expect(attempts.filter((a) => !is2xx(a.outcome) || a.ms >= 3_000)).toEqual([])
  expect(attempts).toHaveLength(during.length)
  const waited = attempts.filter((a) => a.ms >= 1_000).length
  expect(waited, 'answers that waited for the slow origin').toBeLessThanOrEqual(during.length / 2)
  // Leave the Worker forwarding again, not shedding: past SHED_OPEN_MS a probe finds the origin
  // healthy and slow start reopens the way, so the next case's forwards reach the origin (the
  // mid-request kill needs some inside it) instead of going to the queue at the edge.
  await delay(2_500)
  await c.send(c.fresh(6), { gapMs: 50 })
})

faultCase('origin killed (SIGKILL) mid-request', async (c) => {
  const origin = stack.origins[0]
  // Hold inserts into messages, so that a burst is inside the origin (mid-transaction) when the
  // process dies; release the lock a moment before the kill, so that some of them commit and
  // die before their answer leaves.
  const hold = await holdInserts()
  try {
    const burst = c.fresh(15)
    await c.send([...burst, ...c.forged()], { gapMs: 10 })
    await delay(800)
    const cutBefore = stack.balancer.failures().midRequest
    await c.during(async () => {
      await killAfterRelease(hold)
      try {
        await c.send(c.fresh(5), { gapMs: 100 })
      } finally {
        await origin.restart()
      }
    })
    // Not a stop between requests: some forwards were inside the origin when it died.
    expect(stack.balancer.failures().midRequest - cutBefore).toBeGreaterThan(0)
  } finally {
    await hold.end()
  }
  await c.send(c.fresh(5), { gapMs: 50 })
})

faultCase('Postgres stopped, then restarted', async (c) => {
  const before = c.fresh(5)
  await c.send(before, { gapMs: 50 })
  await delay(300)
  await c.during(async () => {
    const downAt = Date.now()
    await stack.postgres.stop('immediate')
    try {
      await c.send([...c.fresh(15), ...c.forged()], { gapMs: 250 })
      await until(downAt, OUTAGE_MS)
    } finally {
      await stack.postgres.start()
    }
  })
  await c.send([...c.fresh(5), ...before], { gapMs: 50 })
})

faultCase('two origins, one killed', async (c) => {
  const [a, b] = stack.origins
  stack.balancer.setBackends([a.url, b.url])
  try {
    const first = c.fresh(10)
    const sending = c.send(first, { gapMs: 100 })
    await delay(500)
    const unreachableBefore = stack.balancer.failures().unreachable
    await c.during(async () => {
      await b.kill('SIGKILL')
      try {
        await sending
        // The balancer has no health checks: every other forward goes to the dead pod.
        await c.send([...c.fresh(15), ...c.forged()], { gapMs: 150 })
        await delay(500)
      } finally {
        await b.restart()
      }
    })
    expect(stack.balancer.failures().unreachable - unreachableBefore).toBeGreaterThan(0)
    await c.send([...c.fresh(5), ...first], { gapMs: 50 })
    await c.settle()
  } finally {
    stack.balancer.setBackends([a.url])
  }
})

faultCase('origin and Redis down together', async (c) => {
  let during: Message[] = []
  await originOutage(c, { signal: 'SIGKILL', redis: true }, async (before) => {
    during = c.fresh(15)
    await c.send([...during, ...c.forged()], { gapMs: 150 })
    // Replays of stored messages: no Redis to say so, queued again, Postgres decides.
    await c.send(before, { gapMs: 30 })
  })
  await c.settle()
  // Twilio does not retry a 5xx: before the queue these were answered 503 and lost. (Soft: the
  // case still runs to its table row, which shows the loss.)
  const twilio = during.filter((m) => m.vendor === 'twilio')
  expect
    .soft(twilio.flatMap((m) => m.attempts.map((a) => a.outcome)))
    .toEqual(twilio.map(() => 200))
  await c.send(c.fresh(5), { gapMs: 50 })
})

faultCase('Redis flushed during an origin outage', async (c) => {
  await originOutage(c, { signal: 'SIGKILL' }, async (before) => {
    const queued = c.fresh(15)
    await c.send([...queued, ...c.forged()], { gapMs: 100 })
    await c.settle()
    // The spool is not in Redis: a flush (failover, eviction) costs the claims, not events.
    await stack.redis.flushAll()
    // Vendor retries after the flush find no claim: each is queued a second time.
    await c.send([...before, ...queued.slice(0, 8)], { gapMs: 30 })
  })
  await c.send(c.fresh(5), { gapMs: 50 })
})

faultCase('a poisoned entry among good ones', async (c) => {
  const origin = stack.origins[0]
  const good = c.fresh(20)
  const poisoned = c.fresh(1, ['whatsapp'])[0] as Message
  let failure: DeadFailure | undefined
  await c.during(async () => {
    // A WAF in front of the origin refuses the poisoned text (its marker, then a space: `…m1`
    // is the start of `…m10`), on /v1/events only: the dead-letter report still gets through.
    stack.balancer.setPoison({ marker: `${poisoned.marker} `, status: 403, path: '/v1/events' })
    try {
      // All queued together in an outage, the poisoned one in the middle.
      await origin.kill('SIGKILL')
      try {
        await c.send([...good.slice(0, 10), poisoned, ...good.slice(10), ...c.forged()], {
          gapMs: 50,
        })
        await c.settle()
      } finally {
        await origin.restart()
      }
      // No head-of-line blocking: the good ones land while the poisoned one is still retried.
      expect(await c.until(() => c.landed(good), 20_000), 'the good ones landed').toBe(true)
      expect(stack.worker.spool(poisoned.needle)).toMatchObject({ queued: 1, dead: 0 })
      // After its retries, dead in channel_failures, not in messages.
      const dead = async () => (await c.deadFailure(poisoned)) !== undefined
      expect(await c.until(dead, 60_000), 'the poisoned event dead in channel_failures').toBe(true)
      failure = await c.deadFailure(poisoned)
      expect(failure).toMatchObject({
        status: 'dead',
        attempts: SPOOL_SETTINGS.maxAttempts,
        error: 'origin 403',
      })
      expect(await c.rowsOf(poisoned)).toBe(0)
    } finally {
      // The operator fixes the WAF rule.
      stack.balancer.setPoison(null)
    }
  })
  const replay = await c.replay(poisoned, failure as DeadFailure)
  expect(replay.code, replay.stdout + replay.stderr).toBe(0)
  expect((await c.deadFailure(poisoned))?.status).toBe('resolved')
  await c.send(c.fresh(5), { gapMs: 50 })
})

faultCase('WhatsApp Cloud batches, the origin failing one message of a batch', async (c) => {
  // Six POSTs of 3 messages on 2 phone numbers; the origin (a WAF rule) answers 503 for one
  // message of the third: that message is queued, the rest of its batch is forwarded, and Meta
  // is told 200 (the batch is taken).
  const batches = Array.from({ length: 6 }, () => c.freshBatch(3))
  const poisoned = batches[2]?.[1] as Message
  const others = batches.flat().filter((m) => m !== poisoned)
  await c.during(async () => {
    stack.balancer.setPoison({ marker: `${poisoned.marker} `, status: 503, path: '/v1/events' })
    try {
      await c.sendBatch([...batches, c.freshBatch(2, { forged: true })], { gapMs: 100 })
      await c.settle()
      expect(await c.until(() => c.landed(others), 20_000), 'the others landed').toBe(true)
      expect(stack.worker.spool(poisoned.needle)).toMatchObject({ queued: 1, dead: 0 })
      expect(await c.rowsOf(poisoned)).toBe(0)
      // Meta resends whole batches (a duplicate POST): only what is missing could be added.
      await c.sendBatch(batches, { gapMs: 20 })
      await c.settle()
    } finally {
      stack.balancer.setPoison(null)
    }
  })
  // The queued message lands on its own from the queue; every POST was answered 200.
  expect(batches.every((b) => b[0]?.attempts.every((a) => a.outcome === 200))).toBe(true)
  await c.sendBatch([c.freshBatch(3)], { gapMs: 50 })
})

faultCase('origin killed (SIGKILL) while the consumer is mid-batch', async (c) => {
  const origin = stack.origins[0]
  await c.during(async () => {
    await origin.kill('SIGKILL')
    // Inserts held from here: once the origin is back, the consumer's next batch of retries
    // waits inside it.
    const hold = await holdInserts()
    try {
      await c.send([...c.fresh(40), ...c.forged()], { gapMs: 20 })
      await c.settle()
      const sentBefore = forwards()
      await origin.restart()
      const cutBefore = stack.balancer.failures().midRequest
      // The consumer's forwards waiting inside the origin on the held inserts (under load its
      // forwards may time out and come back later: wait for some to be inside right now).
      const forwarding = () => forwards() >= sentBefore + 3 && stack.balancer.inFlight() > 0
      expect(await c.until(forwarding, 20_000), 'the consumer forwarding').toBe(true)
      // Killed again with a batch inside it, then the inserts released: the dead origin's
      // statements commit with no one left to answer (a one-statement ingest answers within a
      // millisecond of the lock going, too fast for a kill after the release to catch it).
      await killThenRelease(hold)
      expect(stack.balancer.failures().midRequest - cutBefore).toBeGreaterThan(0)
      await c.send(c.fresh(5), { gapMs: 100 })
    } finally {
      await hold.end()
      if (!origin.running) await origin.restart()
    }
  })
  await c.send(c.fresh(5), { gapMs: 50 })
})

faultCase(
  '50 concurrent copies',
  async (c) => {
    // One channel at a time: 50 copies of one delivery at once, each copy with its vendor's retries.
    for (const message of c.fresh(CHANNELS.length)) {
      await c.send([message], { copies: 50 })
      await delay(500)
    }
    await c.send(c.forged(), { copies: 5 })
  },
  { fault: false },
)

faultCase(
  '8 replays of every event',
  async (c) => {
    const events = c.fresh(10)
    for (let round = 0; round < 8; round++) {
      await c.send(events, { gapMs: 10 })
      await delay(150)
    }
    await c.send(c.forged())
  },
  { fault: false },
)

faultCase(
  'burst of distinct events interleaved with replays',
  async (c) => {
    const events = c.fresh(40)
    for (const [i, event] of events.entries()) {
      const replays = i === 0 ? [] : [events[i - 1], events[Math.floor(i / 2)]]
      await c.send([event, ...replays.filter((m): m is Message => m !== undefined)])
      await delay(50)
    }
    await c.send(c.forged())
  },
  { fault: false },
)

/**
 * Five messages that land first (returned), then an outage of origin 0 (and of Redis, with
 * `redis`) of OUTAGE_MS in all, `meanwhile` running in it, marked as the fault.
 */
async function originOutage(
  c: FaultCase,
  options: { signal: 'SIGKILL' | 'SIGTERM'; redis?: boolean },
  meanwhile: (before: Message[]) => Promise<void>,
): Promise<Message[]> {
  const before = c.fresh(5)
  await c.send(before, { gapMs: 50 })
  await delay(300)
  const origin = stack.origins[0]
  await c.during(async () => {
    const downAt = Date.now()
    await Promise.all([origin.kill(options.signal), options.redis && stack.redis.kill()])
    try {
      await meanwhile(before)
      // The restart itself takes a few seconds (tsx compiles): the outage is all of it.
      await until(downAt, OUTAGE_MS - 2_500)
    } finally {
      await Promise.all([origin.restart(), options.redis && stack.redis.start()])
    }
  })
  return before
}

/** Requests the balancer has passed to origin pods so far. */
function forwards(): number {
  return Object.values(stack.balancer.counts()).reduce((sum, n) => sum + n, 0)
}

interface InsertHold {
  /** Lets the held inserts go (COMMIT of the locking transaction). */
  release(): Promise<void>
  /** Releases if not yet, and returns the connection. */
  end(): Promise<void>
}

/** Holds every insert into messages: a table lock in a transaction of its own. */
async function holdInserts(): Promise<InsertHold> {
  const lock = await stack.sql.connect()
  let released = false
  await lock.query('BEGIN')
  await lock.query('LOCK TABLE messages IN EXCLUSIVE MODE')
  return {
    async release() {
      await lock.query('COMMIT')
      released = true
    },
    async end() {
      if (!released) await lock.query('ROLLBACK').catch(() => {})
      lock.release()
    },
  }
}

/**
 * Releases the held inserts and SIGKILLs origin 0 a moment later: some of the requests inside it
 * commit and die before their answer leaves.
 */
async function killAfterRelease(hold: InsertHold, afterMs = 15): Promise<void> {
  await hold.release()
  await delay(afterMs)
  await stack.origins[0].kill('SIGKILL')
}

/**
 * SIGKILLs origin 0 while its requests wait on the held inserts, then releases them: Postgres does
 * not look at a client while its statement waits on a lock, so those statements commit, and no
 * answer ever leaves.
 */
async function killThenRelease(hold: InsertHold): Promise<void> {
  await stack.origins[0].kill('SIGKILL')
  await hold.release()
}

/** What the failure message shows: each problem, with the Worker's log lines about it. */
function explanation(c: FaultCase, result: CaseResult): string {
  const lines = [`${result.name}: ${result.problems.length} problems`]
  for (const problem of result.problems.slice(0, 10)) {
    lines.push(`- ${problem}`)
    const marker = problem.split(' ')[1]
    const message = c.messages.find((m) => m.marker === marker)
    if (message) for (const log of c.logsFor(message).slice(-6)) lines.push(`    ${log}`)
  }
  return lines.join('\n')
}

function report(done: readonly CaseResult[]): void {
  if (done.length === 0) return
  const table = formatTable(done)
  const seconds = ((Date.now() - suiteStartedAt) / 1000).toFixed(0)
  console.log(`\nFault matrix (${done.length} cases, ${seconds} s)\n${table}\n`)
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim()
    } catch {
      return '?'
    }
  }
  const changed = git(
    'status',
    '--porcelain',
    '--',
    'worker',
    'origin',
    'contract',
    'shared',
    'email',
    'migrations',
  )
  const problems = done.flatMap((r) => r.problems.map((p) => `- ${r.name}: ${p}`))
  const text = [
    '# Fault matrix: last run',
    '',
    'Written by `npm run test:faults` (test/faults/fault-matrix.test.ts, overwritten each run);',
    '`npm test` runs the same suite and prints the same table without writing this file.',
    '',
    `- when: ${new Date().toISOString()}, ${done.length} of ${casesDefined} cases, ${seconds} s in all (stack start-up included)`,
    `- code: commit ${git('rev-parse', '--short', 'HEAD')}${changed ? ', with uncommitted changes in worker/ origin/ contract/ shared/ email/ migrations/' : ''}`,
    `- host: ${process.platform}, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
    `- spool channels: ${process.env.FAULTS_SPOOL_CHANNELS ?? "the Worker's default"}`,
    `- queued first: ${process.env.FAULTS_QUEUE_FIRST_CHANNELS ?? "the Worker's default (none)"}`,
    '',
    table,
    '',
    'Columns: _messages_ logical messages sent (forged ones aside); _deliveries_ HTTP requests made,',
    'retries, replays and forged ones included; _in fault_ deliveries started while the fault was in',
    'effect; _accepted_ / _rejected_ deliveries answered 2xx / 4xx; _rows_ message rows found for',
    'the messages; _gave up_ messages never answered 2xx (their vendor stopped trying); _queued_',
    'messages put on the spool queue at least once (answered 200 while the origin failed);',
    '_dead_ messages the spool dead-lettered after its retries (into channel_failures); _replayed_',
    'dead messages replayed by `npm run failures -- replay` (each had no row before its replay);',
    '_lost_ messages without a row (or without their outbox row); _doubled_ extra rows or outbox',
    'rows; _forged leaks_ forged deliveries answered 2xx, or rows they wrote.',
    '',
    // In a code block: problem text (log lines, origin output) is quoted as it is.
    ...(problems.length > 0
      ? ['## Problems', '', '```text', ...problems.slice(0, 200), '```', '']
      : []),
  ].join('\n')
  // Only `npm run test:faults` rewrites the committed evidence; `npm test` just prints the table,
  // so a test run never leaves the work tree modified.
  const target = process.env.FAULTS_RESULTS_FILE
  if (target) writeFileSync(resolve(REPO_ROOT, target), text)
}
