/**
 * A deployment that passes `npm run doctor`, for its tests to break one piece at a time.
 * @module
 */
import type { WranglerConfig } from '../../../local/wrangler-config'

export const GOOD_SECRET = 'a'.repeat(64)
/** A Teams bot (its app id is a variable, not a secret). */
export const teams = { TEAMS_APP_IDS: '8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a' }

export function goodConfig(): WranglerConfig {
  return {
    name: 'inbound-dedup-production',
    main: 'worker/index.ts',
    compatibilityDate: '2026-04-01',
    compatibilityFlags: [],
    vars: { ORIGIN_URL: 'https://origin.acme.test', DEDUP_TTL_SECONDS: '86400' },
    queues: {
      producers: [
        { binding: 'SPOOL', queue: 'q-production' },
        { binding: 'SPOOL_DEAD', queue: 'q-production-dead' },
      ],
      consumers: [
        { queue: 'q-production', max_retries: 100, dead_letter_queue: 'q-production-dead' },
        { queue: 'q-production-dead', max_retries: 100 },
      ],
    },
    r2Buckets: [{ binding: 'SPOOL_BODIES', bucketName: 'bodies-production' }],
    kvNamespaces: [{ binding: 'CONNECTIONS', id: 'f'.repeat(32) }],
  }
}

export const goodSecrets = () => ({
  ORIGIN_SHARED_SECRET: GOOD_SECRET,
  SLACK_SIGNING_SECRET: 'slack-signing-secret-value',
  UPSTASH_REDIS_REST_URL: 'https://redis.acme.test',
  UPSTASH_REDIS_REST_TOKEN: 'upstash-token-value',
})
