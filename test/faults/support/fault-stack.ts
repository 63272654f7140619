/**
 * The fault suite's stack (local/stack.ts), every piece of it the suite's own so that each can be
 * broken for real:
 *
 *   vendors ─► Worker (deployable bundle, Miniflare/workerd) ─► balancer ─► origin pods (2)
 *                 │                                                          │
 *                 └─► Upstash stand-in ─► private redis-server     Neon proxy ─► private Postgres
 *
 * The second origin pod joins the balancer only in the case that kills one of two. The spool is
 * the Worker's own Cloudflare Queue (Miniflare's, in memory): its consumer runs by itself, its
 * retry schedule compressed (1-2 s between attempts, like the vendors' retry delays) and no
 * batch wait. The Worker is never restarted (local queues do not survive that). Nothing here
 * touches the shared Postgres and Redis. The soak runs on the same stack.
 * @module
 */
import type pg from 'pg'
import type { Balancer } from '../../../local/balancer'
import type { DatabaseLayer } from '../../../local/database-layer'
import { startKeyDocuments } from '../../../local/key-documents'
import type { OriginHandle } from '../../../local/origin-process'
import type { PrivatePostgres } from '../../../local/private-postgres'
import type { PrivateRedis } from '../../../local/private-redis'
import type { RedisLayer } from '../../../local/redis-layer'
import { type Stack, startStack } from '../../../local/stack'
import {
  TEAMS_APP,
  TEST_SECRETS,
  teamsDevSigner,
  teamsKeyDocuments,
  vendorBindings,
} from '../../../local/vendor-deliveries'
import { TEST_DATABASE_DRIVER } from '../../support/origin'

export interface FaultWorker {
  url: string
  /** The Worker's log lines (JSON) that contain `needle`. */
  logs(needle: string): string[]
  /**
   * What the spool queue did with the deliveries whose key ends with `needle`, from the Worker's
   * log lines (a Worker cannot read its queue's backlog, so its decisions are the only record).
   */
  spool(needle: string): SpoolTally
}

/** Counts of the spool's log lines about one delivery key (or several that share a needle). */
export interface SpoolTally {
  /** Answered 200 after being put on the queue (`decision: spooled`). */
  queued: number
  /** Taken off the queue for good: delivered, refused for good, or dead-lettered. */
  ended: number
  /** Moved to the dead-letter queue (`spool_dead_lettered`). */
  dead: number
  /** Recorded in Postgres by the dead-letter consumer (`spool_dead_recorded`). */
  recorded: number
}

/** Queue settings compressed like the vendors' retry delays; see {@link startFaultStack}. */
export const SPOOL_SETTINGS = {
  retryBaseSeconds: 1,
  retryMaxSeconds: 2,
  /**
   * At 1-2 s a retry, 20 attempts take 20-40 s: twice the longest outage of the matrix (an
   * OUTAGE_MS of 7 s plus the restart), so no good event is dead-lettered, while a poisoned one
   * still dies within a case's time.
   */
  maxAttempts: 20,
} as const

/** The log lines that count in a {@link SpoolTally}, by their `msg` (and `decision`). */
function tallyField(entry: { msg?: unknown; decision?: unknown }): keyof SpoolTally | null {
  if (entry.msg === 'decision') return entry.decision === 'spooled' ? 'queued' : null
  switch (entry.msg) {
    case 'spool_delivered':
    case 'spool_rejected':
      return 'ended'
    case 'spool_dead_lettered':
      return 'dead'
    case 'spool_dead_recorded':
      return 'recorded'
    default:
      return null
  }
}

const WORKER_LOG_LINES = 50_000

/**
 * The Worker's log lines, kept here (a few thousand decisions per run would flood the test
 * output, and they are what explains a lost message), and the spool's decisions tallied by
 * delivery key (a few hundred keys a run, kept whole, unlike the lines).
 */
class WorkerLines implements Omit<FaultWorker, 'url'> {
  private readonly lines: string[] = []
  private readonly tallies = new Map<string, SpoolTally>()

  add(line: string): void {
    this.count(line)
    this.lines.push(line)
    if (this.lines.length > WORKER_LOG_LINES) {
      this.lines.splice(0, this.lines.length - WORKER_LOG_LINES)
    }
  }

  logs(needle: string): string[] {
    return this.lines.filter((line) => line.includes(needle))
  }

  spool(needle: string): SpoolTally {
    const sum: SpoolTally = { queued: 0, ended: 0, dead: 0, recorded: 0 }
    for (const [key, tally] of this.tallies) {
      // Ends with, not contains: a Slack event id `…m1` is the start of `…m10`.
      if (!key.endsWith(needle)) continue
      for (const field of Object.keys(sum) as Array<keyof SpoolTally>) sum[field] += tally[field]
    }
    return sum
  }

  private count(line: string): void {
    if (!line.includes('spool')) return
    let entry: { msg?: unknown; decision?: unknown; deliveryKey?: unknown }
    try {
      entry = JSON.parse(line)
    } catch {
      return
    }
    const field = tallyField(entry)
    if (!field) return
    const key = typeof entry.deliveryKey === 'string' ? entry.deliveryKey : ''
    const tally = this.tallies.get(key) ?? { queued: 0, ended: 0, dead: 0, recorded: 0 }
    tally[field]++
    // A dead-lettered message has left the spool queue too.
    if (field === 'dead') tally.ended++
    this.tallies.set(key, tally)
  }
}

export interface FaultStack {
  /** The stack underneath (more origins, the watchdog, the wiring). */
  stack: Stack
  redis: PrivateRedis
  postgres: PrivatePostgres
  redisLayer: RedisLayer
  database: DatabaseLayer
  origins: [OriginHandle, OriginHandle]
  balancer: Balancer
  worker: FaultWorker
  /** Straight to the private database (counting rows, holding locks); survives its outages. */
  sql: pg.Pool
  /** Puts every piece back as a case expects to find it (after a case that failed half-way). */
  heal(): Promise<void>
  stop(): Promise<void>
}

export interface FaultStackOptions {
  /**
   * The Worker's SPOOL_CHANNELS. `none` runs the matrix with the spool off: the outage cases must
   * then fail (Twilio loses every message the origin could not take), which shows they can.
   * @default FAULTS_SPOOL_CHANNELS, else the Worker's default (every channel)
   */
  spoolChannels?: string
  /**
   * The Worker's QUEUE_FIRST_CHANNELS: the matrix (or the soak) with those channels queued before
   * any forward. @default FAULTS_QUEUE_FIRST_CHANNELS, else the Worker's default (none)
   */
  queueFirstChannels?: string
}

export async function startFaultStack(options: FaultStackOptions = {}): Promise<FaultStack> {
  const lines = new WorkerLines()
  const spoolChannels = options.spoolChannels ?? process.env.FAULTS_SPOOL_CHANNELS
  const queueFirst = options.queueFirstChannels ?? process.env.FAULTS_QUEUE_FIRST_CHANNELS
  const teamsKeys = await startTeamsKeys()
  const stack = await startStack({
    postgres: 'private',
    // TEST_DATABASE_DRIVER=pg: the origins on node-postgres over TCP (the soak's too).
    databaseDriver: TEST_DATABASE_DRIVER,
    redis: 'private',
    keyPrefix: 'faults:',
    originSecret: TEST_SECRETS.origin,
    origins: ['origin-a', 'origin-b'],
    originEnv: { LOG_LEVEL: 'warn' },
    balancer: true,
    worker: {
      vars: {
        ...vendorBindings(),
        TEAMS_APP_IDS: TEAMS_APP,
        TEAMS_OPENID_METADATA_URL: teamsKeys.metadataUrl,
        SPOOL_RETRY_BASE_SECONDS: String(SPOOL_SETTINGS.retryBaseSeconds),
        SPOOL_RETRY_MAX_SECONDS: String(SPOOL_SETTINGS.retryMaxSeconds),
        SPOOL_MAX_ATTEMPTS: String(SPOOL_SETTINGS.maxAttempts),
        ...(spoolChannels !== undefined ? { SPOOL_CHANNELS: spoolChannels } : {}),
        ...(queueFirst !== undefined ? { QUEUE_FIRST_CHANNELS: queueFirst } : {}),
      },
      // No batch wait: a queued event is forwarded as soon as the consumer is free.
      queueConsumers: { max_batch_timeout: 0 },
      onLine: (line) => lines.add(line),
    },
  })
  const { redisServer, postgresServer, balancer } = stack
  const [a, b] = stack.origins
  if (!redisServer || !postgresServer || !balancer || !a || !b) {
    await stack.stop()
    await teamsKeys.close()
    throw new Error('the fault stack lacks one of its pieces')
  }
  const origins: [OriginHandle, OriginHandle] = [a, b]
  return {
    stack,
    redis: redisServer,
    postgres: postgresServer,
    redisLayer: stack.redis,
    database: stack.database,
    origins,
    balancer,
    worker: {
      url: stack.worker.url,
      logs: (needle) => lines.logs(needle),
      spool: (needle) => lines.spool(needle),
    },
    sql: stack.sql,
    async heal() {
      stack.redis.setLatency(0)
      balancer.setBackends([a.url])
      balancer.setPoison(null)
      balancer.failQueueConsumer(null)
      balancer.setAnswerDelay(0)
      redisServer.resume()
      await redisServer.start()
      await postgresServer.start()
      for (const origin of origins) if (!origin.running) await origin.restart()
    },
    stop: async () => {
      await stack.stop()
      await teamsKeys.close()
    },
  }
}

/** The Teams deliveries' signing key (the development key), as login.botframework.com serves keys. */
async function startTeamsKeys(): Promise<{ metadataUrl: string; close(): Promise<void> }> {
  const server = await startKeyDocuments()
  const { metadata, jwks } = teamsKeyDocuments(`${server.url}/keys`, [await teamsDevSigner()])
  await fetch(`${server.url}/openid`, { method: 'PUT', body: JSON.stringify(metadata) })
  await fetch(`${server.url}/keys`, { method: 'PUT', body: JSON.stringify(jwks) })
  return { metadataUrl: `${server.url}/openid`, close: () => server.close() }
}
