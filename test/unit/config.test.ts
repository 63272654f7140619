import { describe, expect, it } from 'vitest'
import { DEFAULTS, parseSettings, settingsFor } from '../../worker/config'
import type { Env } from '../../worker/env'

const complete: Env = {
  SLACK_SIGNING_SECRET: 's',
  TWILIO_AUTH_TOKEN: 't',
  TELEGRAM_SECRET_TOKEN: 'g',
  TELEGRAM_BOT_ID: '123',
  ORIGIN_URL: 'http://127.0.0.1:8788/',
  ORIGIN_SHARED_SECRET: 'new, old',
  UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:8079',
  UPSTASH_REDIS_REST_TOKEN: 'tok',
}

describe('settings', () => {
  it('has the documented defaults', () => {
    const s = parseSettings(complete)
    expect(s).toMatchObject(DEFAULTS)
    expect(s.warnings).toEqual([])
    expect(s.origin).toEqual({ url: 'http://127.0.0.1:8788', secrets: ['new', 'old'] })
  })

  it('disables only the channel whose secret is missing, naming the variable', () => {
    const s = parseSettings({ ...complete, TWILIO_AUTH_TOKEN: '' })
    expect(s.twilio).toEqual({ ok: false, missing: ['TWILIO_AUTH_TOKEN'] })
    expect(s.slack.ok).toBe(true)
    expect(s.telegram.ok).toBe(true)
  })

  it('requires a numeric TELEGRAM_BOT_ID for Telegram', () => {
    expect(parseSettings({ ...complete, TELEGRAM_BOT_ID: '' }).telegram).toEqual({
      ok: false,
      missing: ['TELEGRAM_BOT_ID'],
    })
    expect(parseSettings({ ...complete, TELEGRAM_BOT_ID: 'bot' }).telegram).toMatchObject({
      ok: false,
    })
  })

  it('disables every channel without an origin, naming both variables', () => {
    const s = parseSettings({ ...complete, ORIGIN_URL: undefined, ORIGIN_SHARED_SECRET: ' , ' })
    for (const channel of [s.slack, s.twilio, s.telegram]) {
      expect(channel).toMatchObject({ ok: false, missing: ['ORIGIN_URL', 'ORIGIN_SHARED_SECRET'] })
    }
  })

  it('runs without Redis (Postgres decides) and says so', () => {
    const s = parseSettings({ ...complete, UPSTASH_REDIS_REST_TOKEN: '' })
    expect(s.redis).toBeNull()
    expect(s.slack.ok).toBe(true)
    expect(s.warnings.join()).toMatch(/UPSTASH_REDIS_REST_URL/)
  })

  it.each([
    ['REDIS_TIMEOUT_MS', 'fast', 'redisTimeoutMs', DEFAULTS.redisTimeoutMs],
    ['MAX_BODY_BYTES', '-1', 'maxBodyBytes', DEFAULTS.maxBodyBytes],
    ['DEDUP_TTL_SECONDS', '1.5', 'dedupTtlSeconds', DEFAULTS.dedupTtlSeconds],
  ] as const)(
    'replaces an invalid %s with its default and warns',
    (name, value, field, fallback) => {
      const s = parseSettings({ ...complete, [name]: value })
      expect(s[field]).toBe(fallback)
      expect(s.warnings.some((w) => w.startsWith(name))).toBe(true)
    },
  )

  it('keeps the claim lease longer than one forward', () => {
    const s = parseSettings({ ...complete, CLAIM_LEASE_MS: '1000', ORIGIN_TIMEOUT_MS: '2000' })
    expect(s.claimLeaseMs).toBeGreaterThan(s.originTimeoutMs + 2 * s.redisTimeoutMs)
    expect(s.warnings.join()).toMatch(/CLAIM_LEASE_MS/)
  })

  it('ignores an invalid URL', () => {
    const s = parseSettings({ ...complete, ORIGIN_URL: 'ftp://x', PUBLIC_BASE_URL: 'not a url' })
    expect(s.origin).toBeNull()
    expect(s.warnings.join()).toMatch(/ORIGIN_URL/)
  })

  it('parses once per env object', () => {
    const env = { ...complete }
    expect(settingsFor(env)).toBe(settingsFor(env))
    expect(settingsFor({ ...complete })).not.toBe(settingsFor(env))
  })
})
