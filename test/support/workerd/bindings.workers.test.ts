/**
 * What the Worker under test is given: wrangler.toml's `[vars]`, queues and bucket, and the test
 * config's bindings, never a developer's `.dev.vars` (one copied from `.dev.vars.example` sets every
 * name below; wrangler would add them all beside the tests' own).
 */
import { env } from 'cloudflare:workers'
import { describe, expect, it } from 'vitest'

/** Secrets and settings `.dev.vars.example` sets and vitest.workers.config.ts does not bind. */
const DEV_VARS_ONLY = [
  'OPERATOR_TOKEN',
  'API_KEYS',
  'WHATSAPP_APP_SECRET',
  'LINE_CHANNEL_SECRET',
  'MESSENGER_APP_SECRET',
  'INSTAGRAM_APP_SECRET',
  'TEAMS_APP_IDS',
  'WECHAT_TOKENS_BY_ACCOUNT',
] as const

describe('the test pool’s bindings', () => {
  it('hold none of a .dev.vars’s entries', () => {
    const given = env as unknown as Record<string, unknown>
    expect(DEV_VARS_ONLY.filter((name) => given[name] !== undefined)).toEqual([])
  })

  it('hold the test config’s secrets over wrangler.toml’s empty [vars]', () => {
    expect(env.TELEGRAM_BOT_ID).toBe('424242')
    expect(env.DEDUP_TTL_SECONDS).toBe('86400')
  })
})
