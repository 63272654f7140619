/**
 * The whole gateway, every piece of it the suite's own so that each can be broken for real:
 *
 *   vendors ─► Worker (deployable bundle, Miniflare/workerd) ─► balancer ─► origin pods (2)
 *                 │                                                          │
 *                 └─► Upstash stand-in ─► private redis-server     Neon proxy ─► private Postgres
 *
 * The second origin pod joins the balancer only in the case that kills one of two. The spool is
 * the Worker's own Cloudflare Queue (Miniflare's, in memory): its consumer runs by itself, its
 * retry schedule compressed (1-2 s between attempts, like the vendors' retry delays) and no
 * batch wait. The Worker is never restarted (local queues do not survive that). Nothing here
 * touches the shared Postgres and Redis.
 * @module
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import {
  type DatabaseLayer,
  type OriginHandle,
  type RedisLayer,
  startDatabaseLayer,
  startOrigin,
  startRedisLayer,
  startWorkerMiniflare,
} from '../../../local/stack'
import { TEST_SECRETS } from '../../unit/signed-requests'
import { WA_TEST_SECRET, WA_VERIFY_TOKEN } from '../../unit/whatsapp-cloud-fixtures'
import { type Balancer, startBalancer } from './balancer'
import { type PrivatePostgres, startPrivatePostgres } from './private-postgres'
import { type PrivateRedis, startPrivateRedis } from './private-redis'
import { Watchdog } from './watchdog'

/** One origin process, kept registered with the watchdog across kills and restarts. */
export class OriginPod {
  /** Stopped by the suite (kill, stop) and not restarted since. */
  private down = false

  constructor(
    private readonly handle: OriginHandle,
    private readonly watchdog: Watchdog,
  ) {
    watchdog.register(handle.pid)
  }

  get url(): string {
    return this.handle.url
  }

  get running(): boolean {
    return this.handle.running
  }

  /** Not running, and not because the suite stopped it: it crashed by itself. */
  get crashed(): boolean {
    return !this.down && !this.handle.running
  }

  output(lines?: number): string {
    return this.handle.output(lines)
  }

  /** SIGKILL: a crash, in-flight requests and all. SIGTERM: a graceful stop. */
  async kill(signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    const pid = this.handle.pid
    this.down = true
    await this.handle.kill(signal)
    this.watchdog.release(pid)
  }

  /** A replacement process on the same port. */
  async restart(): Promise<void> {
    const old = this.handle.pid
    await this.handle.restart()
    this.down = false
    this.watchdog.release(old)
    this.watchdog.register(this.handle.pid)
  }

  async stop(): Promise<void> {
    const pid = this.handle.pid
    this.down = true
    await this.handle.stop()
    this.watchdog.release(pid)
  }
}

export interface FaultWorker {
  url: string
  /** The Worker's log lines (JSON) that contain `needle`. */
  logs(needle: string): string[]
  /**
   * What the spool queue did with the deliveries whose key ends with `needle`, from the Worker's
   * log lines (a Worker cannot read its queue's backlog, so its decisions are the only record).
   */
  spool(needle: string): SpoolTally
  stop(): Promise<void>
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
 * The deployable bundle in Miniflare, its log lines kept here: a few thousand decisions per run
 * would flood the test output, and they are what explains a lost message.
 */
async function startWorker(vars: Record<string, string>, watchdog: Watchdog): Promise<FaultWorker> {
  const lines: string[] = []
  // By delivery key; kept whole (a few hundred keys a run), unlike the lines.
  const tallies = new Map<string, SpoolTally>()
  const count = (line: string) => {
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
    const tally = tallies.get(key) ?? { queued: 0, ended: 0, dead: 0, recorded: 0 }
    tally[field]++
    // A dead-lettered message has left the spool queue too.
    if (field === 'dead') tally.ended++
    tallies.set(key, tally)
  }
  const before = new Set(childProcesses('workerd'))
  const worker = await startWorkerMiniflare({
    vars,
    // No batch wait: a queued event is forwarded as soon as the consumer is free.
    queueConsumers: { max_batch_timeout: 0 },
    onLine: (line) => {
      count(line)
      lines.push(line)
      if (lines.length > WORKER_LOG_LINES) lines.splice(0, lines.length - WORKER_LOG_LINES)
    },
  })
  // Miniflare ends its workerd when this process exits normally, not when it is killed.
  const runtime = childProcesses('workerd').filter((pid) => !before.has(pid))
  for (const pid of runtime) watchdog.register(pid, { group: false })
  return {
    url: worker.url,
    logs: (needle) => lines.filter((line) => line.includes(needle)),
    spool(needle) {
      const sum: SpoolTally = { queued: 0, ended: 0, dead: 0, recorded: 0 }
      for (const [key, tally] of tallies) {
        // Ends with, not contains: a Slack event id `…m1` is the start of `…m10`.
        if (!key.endsWith(needle)) continue
        for (const field of Object.keys(sum) as Array<keyof SpoolTally>) sum[field] += tally[field]
      }
      return sum
    },
    async stop() {
      await worker.stop()
      for (const pid of runtime) watchdog.release(pid)
    },
  }
}

/** Pids of this process's children running `command` (Linux /proc; [] elsewhere). */
function childProcesses(command: string): number[] {
  let entries: string[]
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  } catch {
    return []
  }
  return entries.flatMap((name) => {
    try {
      // "pid (comm) state ppid ...": comm may hold spaces, so split after its closing paren.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      return comm === command && ppid === process.pid ? [Number(name)] : []
    } catch {
      return []
    }
  })
}

export interface FaultStack {
  watchdog: Watchdog
  redis: PrivateRedis
  postgres: PrivatePostgres
  redisLayer: RedisLayer
  database: DatabaseLayer
  origins: [OriginPod, OriginPod]
  balancer: Balancer
  worker: FaultWorker
  /** Straight to the private database (counting rows, holding locks); survives its outages. */
  sql: pg.Pool
  /** Puts every piece back as a case expects to find it (after a case that failed half-way). */
  heal(): Promise<void>
  stop(): Promise<void>
}

const UPSTASH_TOKEN = 'fault-suite-upstash-token'

export async function startFaultStack(): Promise<FaultStack> {
  const watchdog = new Watchdog(mkdtempSync(join(tmpdir(), 'inbound-dedup-faults-')))
  const stops: Array<() => Promise<void>> = []
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    watchdog.stop()
  }
  try {
    const [redis, postgres] = await Promise.all([
      startPrivateRedis(watchdog),
      startPrivatePostgres(watchdog),
    ])
    stops.push(
      () => redis.stop(),
      () => postgres.close(),
    )
    const [redisLayer, database] = await Promise.all([
      startRedisLayer({ redisUrl: redis.url, token: UPSTASH_TOKEN }),
      startDatabaseLayer({ databaseUrl: postgres.databaseUrl('inbound_dedup_faults') }),
    ])
    stops.push(
      () => redisLayer.stop(),
      () => database.stop(),
    )
    const originEnv = {
      ...database.originEnv,
      ORIGIN_SHARED_SECRET: TEST_SECRETS.origin,
      LOG_LEVEL: 'warn',
    }
    const origins = (
      await Promise.all(
        ['origin-a', 'origin-b'].map((name) => startOrigin({ name, env: originEnv })),
      )
    ).map((handle) => new OriginPod(handle, watchdog)) as [OriginPod, OriginPod]
    stops.push(...origins.map((origin) => () => origin.stop()))
    const balancer = await startBalancer([origins[0].url])
    stops.push(() => balancer.close())
    const worker = await startWorker(
      {
        SLACK_SIGNING_SECRET: TEST_SECRETS.slack,
        TWILIO_AUTH_TOKEN: TEST_SECRETS.twilio,
        TELEGRAM_SECRET_TOKEN: TEST_SECRETS.telegram,
        TELEGRAM_BOT_ID: TEST_SECRETS.telegramBotId,
        WHATSAPP_APP_SECRET: WA_TEST_SECRET,
        WHATSAPP_VERIFY_TOKEN: WA_VERIFY_TOKEN,
        ORIGIN_SHARED_SECRET: TEST_SECRETS.origin,
        ORIGIN_URL: balancer.url,
        UPSTASH_REDIS_REST_URL: redisLayer.url,
        UPSTASH_REDIS_REST_TOKEN: UPSTASH_TOKEN,
        REDIS_KEY_PREFIX: 'faults:',
        SPOOL_RETRY_BASE_SECONDS: String(SPOOL_SETTINGS.retryBaseSeconds),
        SPOOL_RETRY_MAX_SECONDS: String(SPOOL_SETTINGS.retryMaxSeconds),
        SPOOL_MAX_ATTEMPTS: String(SPOOL_SETTINGS.maxAttempts),
        // FAULTS_SPOOL_CHANNELS=none runs the matrix with the spool off: the outage cases must
        // then fail (Twilio loses every message the origin could not take), which shows they can.
        ...(process.env.FAULTS_SPOOL_CHANNELS !== undefined
          ? { SPOOL_CHANNELS: process.env.FAULTS_SPOOL_CHANNELS }
          : {}),
      },
      watchdog,
    )
    stops.push(() => worker.stop())
    const sql = new pg.Pool({
      connectionString: database.databaseUrl,
      max: 4,
      connectionTimeoutMillis: 5_000,
    })
    // Idle connections die with Postgres in its outage cases; that is expected, not a crash.
    sql.on('error', () => {})
    stops.push(() => sql.end())

    return {
      watchdog,
      redis,
      postgres,
      redisLayer,
      database,
      origins,
      balancer,
      worker,
      sql,
      async heal() {
        redisLayer.setLatency(0)
        balancer.setBackends([origins[0].url])
        balancer.setPoison(null)
        balancer.failQueueConsumer(null)
        await redis.start()
        await postgres.start()
        for (const origin of origins) if (!origin.running) await origin.restart()
      },
      stop: stopAll,
    }
  } catch (err) {
    await stopAll()
    throw err
  }
}
