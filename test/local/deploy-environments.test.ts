/**
 * wrangler.toml's deployable environments (staging, production): each builds offline with
 * `wrangler deploy --dry-run --env NAME`, declares every var the top level does, has queues, a
 * dead-letter queue and a spool bucket of its own, and no loopback ORIGIN_URL; and the spool
 * consumer's delivery settings (chosen from the bench: docs/benchmark.md, "Overload") are the same
 * in every environment and in the local stack, within what one origin batch request takes.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { BATCH_LIMITS } from '../../contract/event-batch'
import {
  buildWorker,
  miniflareQueueOptions,
  type QueueConsumerConfig,
  readWranglerConfig,
  type WranglerConfig,
} from '../../local/wrangler-config'

const ENVIRONMENTS = ['staging', 'production'] as const
const LOOPBACK = /^(localhost|127\.|\[::1\]|0\.0\.0\.0)/

describe('deployable environments in wrangler.toml', () => {
  it('wrangler deploy --dry-run --env production builds offline', async () => {
    const outDir = mkdtempSync(join(tmpdir(), 'inbound-dedup-deploy-'))
    try {
      const entry = await buildWorker(outDir, { env: 'production' })
      expect(existsSync(entry)).toBe(true)
    } finally {
      rmSync(outDir, { recursive: true, force: true })
    }
  })

  for (const env of ENVIRONMENTS) {
    it(`${env}: its own vars, queues, dead-letter queue and bucket; no loopback origin`, async () => {
      const top = await readWranglerConfig()
      const config = await readWranglerConfig(undefined, env)
      expect(config.name).toBe(`inbound-dedup-${env}`)
      expect(Object.keys(config.vars).sort()).toEqual(Object.keys(top.vars).sort())
      const origin = new URL(config.vars.ORIGIN_URL ?? '')
      expect(origin.protocol).toBe('https:')
      expect(origin.hostname).not.toMatch(LOOPBACK)

      const queue = (binding: string) =>
        config.queues.producers.find((p) => p.binding === binding)?.queue
      const spool = queue('SPOOL')
      const dead = queue('SPOOL_DEAD')
      expect(spool).toBe(`inbound-dedup-spool-${env}`)
      expect(dead).toBe(`${spool}-dead`)
      const topQueues = top.queues.producers.map((p) => p.queue)
      expect(topQueues).not.toContain(spool)
      expect(config.queues.consumers.find((c) => c.queue === spool)?.dead_letter_queue).toBe(dead)
      expect(config.queues.consumers.map((c) => c.queue)).toContain(dead)
      expect(config.r2Buckets).toContainEqual({
        binding: 'SPOOL_BODIES',
        bucketName: `inbound-dedup-spool-bodies-${env}`,
      })
      expect(config.kvNamespaces.map((n) => n.binding)).toEqual(['CONNECTIONS'])
    })
  }

  it('the spool consumer: the same batch size, wait and concurrency everywhere, local stack included', async () => {
    const top = await readWranglerConfig()
    const delivery = (config: WranglerConfig, dead: boolean): Partial<QueueConsumerConfig> => {
      const consumer = config.queues.consumers.find((c) => c.queue.endsWith('-dead') === dead)
      const { queue: _, dead_letter_queue: __, ...settings } = consumer ?? { queue: '' }
      return settings
    }
    const spool = delivery(top, false)
    expect(spool.max_batch_size).toBeGreaterThan(0)
    // The consumer forwards a queue batch as one origin request: the origin takes that many.
    expect(spool.max_batch_size).toBeLessThanOrEqual(BATCH_LIMITS.events)
    expect(spool.max_batch_timeout).toBeGreaterThanOrEqual(0)
    expect(spool.max_concurrency).toBeGreaterThan(0)
    for (const env of ENVIRONMENTS) {
      const config = await readWranglerConfig(undefined, env)
      expect(delivery(config, false), env).toEqual(spool)
      expect(delivery(config, true), `${env} dead letters`).toEqual(delivery(top, true))
    }
    // The local stack's Miniflare gets the same batch size and wait (it has no concurrency).
    const local = miniflareQueueOptions(top).queueConsumers['inbound-dedup-spool']
    expect(local?.maxBatchSize).toBe(spool.max_batch_size)
    expect(local?.maxBatchTimeout).toBe(spool.max_batch_timeout)
  })
})
