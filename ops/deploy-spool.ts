/**
 * What the spool needs of a deployment (`npm run doctor`): its two queues bound and wired, the
 * consumer's retries above the code's own attempts, one retention for both queues that outlives
 * the retry schedule, and the claim check's R2 bucket (worker/spool/claim-check.ts).
 *
 * The retention is stated here once ({@link QUEUE_RETENTION_SECONDS}); docs/deploying.md step 4
 * gives the same figure and docs/guarantees.md refers to it (test/ops/doctor.test.ts checks).
 * @module
 */

import type { WranglerConfig } from '../local/wrangler-config'
import { backoffMs } from '../shared/backoff'
import type { Settings } from '../worker/config'
import { EVENT_KEY_PREFIX, MAX_SPOOL_MESSAGE_BYTES } from '../worker/spool/claim-check'
import { error, type Finding, warn } from './deploy-finding'

/**
 * How long both spool queues keep a message: 14 days, Cloudflare's maximum (a queue keeps 60 s to
 * 1,209,600 s, 4 days unless set; at most a day on the Workers Free plan). The spool queue needs
 * more than its retry schedule; the dead-letter queue holds each event the origin has not recorded
 * yet, so its retention is how long an origin outage may last before a queued event is lost.
 */
export const QUEUE_RETENTION_SECONDS = 14 * 86_400
/** The claim check's bucket binding (wrangler.toml `[[r2_buckets]]`). */
export const SPOOL_BODIES_BINDING = 'SPOOL_BODIES'
/** The lifecycle rule's age for orphaned objects (a queue send that failed after the put). */
export const ORPHAN_EXPIRE_DAYS = 30

type SpoolSettings = Settings['spool']

/** The queues, their consumers and retention, and the bucket, for one environment. */
export function checkSpool(
  config: WranglerConfig,
  spool: SpoolSettings,
  envName: string | undefined,
): Finding[] {
  return [...checkQueues(config, spool), ...checkBucket(config, envName)]
}

function checkQueues(config: WranglerConfig, spool: SpoolSettings): Finding[] {
  const findings: Finding[] = []
  const queueOf = (binding: string) => config.queues.producers.find((p) => p.binding === binding)
  const spoolQueue = queueOf('SPOOL')?.queue
  const dead = queueOf('SPOOL_DEAD')?.queue
  if (!spoolQueue || !dead) {
    return [
      error(
        'the SPOOL and SPOOL_DEAD queue producers are not both bound',
        'declare both [[queues.producers]] (binding SPOOL and SPOOL_DEAD), as the top level does',
      ),
    ]
  }
  const consumer = config.queues.consumers.find((c) => c.queue === spoolQueue)
  if (!dead.endsWith('-dead')) {
    findings.push(
      error(`dead-letter queue ${dead} does not end in -dead`, 'rename it to <spool>-dead'),
    )
  }
  if (consumer?.dead_letter_queue !== dead) {
    findings.push(
      error(
        `queue ${spoolQueue} has no consumer with dead_letter_queue = "${dead}"`,
        'add its [[queues.consumers]] entry with dead_letter_queue, as the top level has',
      ),
    )
  } else if ((consumer.max_retries ?? 3) <= spool.maxAttempts) {
    findings.push(
      error(
        `queue ${spoolQueue}: max_retries must stay above SPOOL_MAX_ATTEMPTS (${spool.maxAttempts})`,
        'raise max_retries (the top level has 100)',
      ),
    )
  }
  if (!config.queues.consumers.some((c) => c.queue === dead)) {
    findings.push(
      error(
        `queue ${dead} has no consumer: dead events would never be recorded`,
        'add its [[queues.consumers]] entry, as the top level has',
      ),
    )
  }
  findings.push(retentionFinding(spoolQueue, dead, spoolScheduleSeconds(spool)))
  return findings
}

/** Both queues at {@link QUEUE_RETENTION_SECONDS}, which the retry schedule must fit in. */
function retentionFinding(spoolQueue: string, dead: string, span: number): Finding {
  const days = QUEUE_RETENTION_SECONDS / 86_400
  if (Math.ceil(span * 1.5) > QUEUE_RETENTION_SECONDS) {
    return error(
      `the spool retries for up to ${hours(span)} h, too close to the ${days} days a queue can keep a message`,
      'lower SPOOL_MAX_ATTEMPTS or SPOOL_RETRY_MAX_SECONDS',
    )
  }
  const flag = `--message-retention-period-secs ${QUEUE_RETENTION_SECONDS}`
  const create = [spoolQueue, dead].map((q) => `npx wrangler queues create ${q} ${flag}`)
  return warn(
    `queues ${spoolQueue} and ${dead} must exist and keep messages ${days} days (${QUEUE_RETENTION_SECONDS} s): the spool retries an event for up to ${hours(span)} h, then its dead letter waits for the origin`,
    `once per environment: ${create.join(' && ')} (a queue that exists: npx wrangler queues update NAME ${flag})`,
  )
}

/** The longest a spooled event waits before it goes dead: every wait at its ceiling. */
export function spoolScheduleSeconds(spool: {
  maxAttempts: number
  retryBaseSeconds: number
  retryMaxSeconds: number
}): number {
  const policy = { baseMs: spool.retryBaseSeconds * 1000, maxMs: spool.retryMaxSeconds * 1000 }
  let ms = 0
  for (let attempt = 1; attempt < spool.maxAttempts; attempt++) ms += backoffMs(policy, attempt, 1)
  return Math.round(ms / 1000)
}

/** Hours to one decimal, as the doctor and docs/guarantees.md give the retry schedule. */
export const hours = (seconds: number) => (seconds / 3600).toFixed(1)

/** The claim check's bucket: bound (else a large event cannot wait), created, expiring orphans. */
function checkBucket(config: WranglerConfig, envName: string | undefined): Finding[] {
  const bucket = config.r2Buckets.find((b) => b.binding === SPOOL_BODIES_BINDING)?.bucketName
  if (!bucket) {
    const section = envName ? `[[env.${envName}.r2_buckets]]` : '[[r2_buckets]]'
    return [
      error(
        `the ${SPOOL_BODIES_BINDING} R2 bucket is not bound: an event over ${MAX_SPOOL_MESSAGE_BYTES.toLocaleString('en')} bytes cannot wait for the origin (its delivery is answered 503)`,
        `declare ${section} with binding = "${SPOOL_BODIES_BINDING}" and a bucket of this environment's own, as wrangler.toml's environments do`,
      ),
    ]
  }
  return [
    warn(
      `R2 bucket ${bucket} must exist, with a lifecycle rule that expires orphaned objects`,
      `once per environment: npx wrangler r2 bucket create ${bucket} && npx wrangler r2 bucket lifecycle add ${bucket} expire-orphans ${EVENT_KEY_PREFIX} --expire-days ${ORPHAN_EXPIRE_DAYS}`,
    ),
  ]
}
