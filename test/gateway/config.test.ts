import { describe, expect, it } from 'vitest'
import { CLAIM_DEFAULTS } from '../../claims'
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
    expect(s.settledMemo).toEqual({ maxEntries: 0, maxAgeMs: 60_000 })
    expect(s.warnings).toEqual([])
    expect(s.origin).toEqual({
      url: 'http://127.0.0.1:8788',
      secrets: ['new', 'old'],
    })
  })

  it('disables only the channel whose secret is missing, naming the variable', () => {
    const s = parseSettings({ ...complete, TWILIO_AUTH_TOKEN: '' })
    expect(s.twilio).toEqual({
      ok: false,
      missing: ['TWILIO_AUTH_TOKEN (or TWILIO_AUTH_TOKENS_BY_ACCOUNT)'],
    })
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

  it('reads the single-tenant variables as shared secrets (any tenant), as before', () => {
    const s = parseSettings({ ...complete, SLACK_SIGNING_SECRET: 'new, old' })
    expect(s.slack).toEqual({
      ok: true,
      value: { signingSecrets: { kind: 'shared', secrets: ['new', 'old'] }, teams: null },
    })
    expect(s.telegram).toEqual({
      ok: true,
      value: {
        secretTokens: { kind: 'per-tenant', byTenant: new Map([['123', ['g']]]) },
        pathlessBotId: '123',
      },
    })
  })

  describe('per-tenant secrets', () => {
    const appA = 'A0AAAA'
    const accountA = `AC${'a'.repeat(32)}`
    const perTenant: Env = {
      ...complete,
      SLACK_SIGNING_SECRETS_BY_APP: ` ${appA}=s-a1 | s-a2 , A0BBBB=s-b,`,
      SLACK_TEAMS_BY_APP: `${appA}=T0AAAA|E0GRID,A0BBBB=T0BBBB`,
      TWILIO_AUTH_TOKENS_BY_ACCOUNT: `${accountA}=t-a`,
      TELEGRAM_SECRET_TOKENS_BY_BOT: '777=tok_7|tok-7b,888=tok8',
    }

    it('parses TENANT=secret1|secret2,... into each tenant its own rotation list', () => {
      const s = parseSettings(perTenant)
      expect(s.slack).toMatchObject({
        ok: true,
        value: {
          signingSecrets: {
            kind: 'per-tenant',
            byTenant: new Map([
              [appA, ['s-a1', 's-a2']],
              ['A0BBBB', ['s-b']],
            ]),
          },
          teams: new Map([
            [appA, new Set(['T0AAAA', 'E0GRID'])],
            ['A0BBBB', new Set(['T0BBBB'])],
          ]),
        },
      })
      expect(s.twilio).toMatchObject({
        ok: true,
        value: { authTokens: { kind: 'per-tenant', byTenant: new Map([[accountA, ['t-a']]]) } },
      })
      // The single-tenant pair is one more bot (and the bare path's bot).
      expect(s.telegram).toEqual({
        ok: true,
        value: {
          secretTokens: {
            kind: 'per-tenant',
            byTenant: new Map([
              ['777', ['tok_7', 'tok-7b']],
              ['888', ['tok8']],
              ['123', ['g']],
            ]),
          },
          pathlessBotId: '123',
        },
      })
      // The shared Slack and Twilio secrets are ignored next to a per-tenant list, and said so.
      expect(s.warnings).toEqual([
        'SLACK_SIGNING_SECRET is ignored while SLACK_SIGNING_SECRETS_BY_APP is set',
        'TWILIO_AUTH_TOKEN is ignored while TWILIO_AUTH_TOKENS_BY_ACCOUNT is set',
      ])
    })

    it('warns about each bad entry by position, never printing a secret', () => {
      const s = parseSettings({
        ...perTenant,
        SLACK_SIGNING_SECRET: '',
        SLACK_SIGNING_SECRETS_BY_APP: `topsecret1,not-an-app=topsecret2,${appA}=,${appA}=topsecret3,${appA}=topsecret4`,
        TELEGRAM_SECRET_TOKENS_BY_BOT: '777=has space',
      })
      expect(s.warnings).toEqual([
        'SLACK_SIGNING_SECRETS_BY_APP entry 1 is not TENANT=secret1|secret2 with TENANT a Slack app id (A…); skipped',
        'SLACK_SIGNING_SECRETS_BY_APP entry 2 is not TENANT=secret1|secret2 with TENANT a Slack app id (A…); skipped',
        `SLACK_SIGNING_SECRETS_BY_APP entry 3 (${appA}) has no secret; skipped`,
        `SLACK_SIGNING_SECRETS_BY_APP entry 5: ${appA} is listed twice; the first entry is used`,
        'TWILIO_AUTH_TOKEN is ignored while TWILIO_AUTH_TOKENS_BY_ACCOUNT is set',
        'TELEGRAM_SECRET_TOKENS_BY_BOT entry 1 (777) has a secret the vendor would not accept',
      ])
      expect(s.warnings.join()).not.toMatch(/topsecret|has space/)
      expect(s.slack).toMatchObject({ ok: true })
    })

    it('a per-tenant list without one valid entry disables the channel (no fallback to the shared one)', () => {
      const s = parseSettings({ ...perTenant, SLACK_SIGNING_SECRETS_BY_APP: 'garbage' })
      expect(s.slack).toEqual({ ok: false, missing: ['SLACK_SIGNING_SECRETS_BY_APP'] })
      expect(s.warnings).toContain(
        'SLACK_SIGNING_SECRETS_BY_APP has no valid entry: the channel is disabled',
      )
    })

    it('several Slack apps need SLACK_TEAMS_BY_APP (503 without it); one app writes for any workspace', () => {
      const none = parseSettings({ ...perTenant, SLACK_TEAMS_BY_APP: '' })
      expect(none.slack).toEqual({ ok: false, missing: ['SLACK_TEAMS_BY_APP'] })
      const garbage = parseSettings({ ...perTenant, SLACK_TEAMS_BY_APP: 'garbage' })
      expect(garbage.slack).toEqual({ ok: false, missing: ['SLACK_TEAMS_BY_APP'] })
      const one = parseSettings({
        ...perTenant,
        SLACK_SIGNING_SECRETS_BY_APP: `${appA}=s-a1`,
        SLACK_TEAMS_BY_APP: '',
      })
      expect(one.slack).toMatchObject({ ok: true, value: { teams: null } })
      const shared = parseSettings({ ...complete, SLACK_TEAMS_BY_APP: `${appA}=T0AAAA` })
      expect(shared.slack).toMatchObject({ ok: true, value: { teams: null } })
      expect(shared.warnings).toContain(
        'SLACK_TEAMS_BY_APP is ignored without SLACK_SIGNING_SECRETS_BY_APP',
      )
    })

    it('an app SLACK_TEAMS_BY_APP does not list writes for no workspace, and is warned about', () => {
      const s = parseSettings({ ...perTenant, SLACK_TEAMS_BY_APP: `${appA}=T0AAAA|nope` })
      expect(s.slack).toMatchObject({
        ok: true,
        value: { teams: new Map([[appA, new Set(['T0AAAA', 'nope'])]]) },
      })
      expect(s.warnings).toEqual(
        expect.arrayContaining([
          `SLACK_TEAMS_BY_APP entry 1 (${appA}) has a team_id the vendor would not accept`,
          'SLACK_TEAMS_BY_APP lists no team_id of A0BBBB',
        ]),
      )
    })

    it('serves Telegram from the per-bot list alone, without a bare-path bot', () => {
      const s = parseSettings({
        ...perTenant,
        TELEGRAM_SECRET_TOKEN: '',
        TELEGRAM_BOT_ID: '',
      })
      expect(s.telegram).toMatchObject({ ok: true, value: { pathlessBotId: null } })
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
    ['REDIS_TIMEOUT_MS', 'fast', 'redisTimeoutMs', CLAIM_DEFAULTS.redisTimeoutMs],
    ['MAX_BODY_BYTES', '-1', 'maxBodyBytes', DEFAULTS.maxBodyBytes],
    ['DEDUP_TTL_SECONDS', '1.5', 'dedupTtlSeconds', CLAIM_DEFAULTS.dedupTtlSeconds],
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

describe('SPOOL_CHANNELS', () => {
  const spool = (value?: string) => {
    const s = parseSettings({
      ...complete,
      ...(value === undefined ? {} : { SPOOL_CHANNELS: value }),
    })
    return { has: (c: string) => s.spool.channels.has(c), warnings: s.warnings }
  }

  it('unset or `all`: every channel, one added after the setting was written too', () => {
    for (const value of [undefined, 'all', ' ALL ']) {
      const { has, warnings } = spool(value)
      for (const channel of ['slack', 'whatsapp', 'email', 'brand-new']) {
        expect(has(channel), `${value} ${channel}`).toBe(true)
      }
      expect(warnings).toEqual([])
    }
  })

  it('a list: those channels only; a name no channel of this Worker writes is warned about', () => {
    const { has, warnings } = spool('whatsapp, sms')
    expect([has('whatsapp'), has('sms'), has('slack'), has('email')]).toEqual([
      true,
      true,
      false,
      false,
    ])
    expect(warnings).toEqual([])
    const typo = spool('whatsap,sms')
    expect(typo.has('sms')).toBe(true)
    // The known names are the registry's (worker/channels/index.ts), email and the API's included.
    expect(typo.warnings).toEqual([
      expect.stringMatching(
        /^SPOOL_CHANNELS names unknown channels; known: slack, .*\bwhatsapp\b.*, email, api, all or none$/,
      ),
    ])
    expect(spool('none').has('slack')).toBe(false)
  })
})

describe('QUEUE_FIRST_CHANNELS', () => {
  const first = (env: Record<string, string>) => {
    const s = parseSettings({ ...complete, ...env })
    return { has: (c: string) => s.spool.firstChannels.has(c), warnings: s.warnings }
  }

  it('unset, empty or `none`: no channel is queued first', () => {
    const envs: Record<string, string>[] = [
      {},
      { QUEUE_FIRST_CHANNELS: ' ' },
      { QUEUE_FIRST_CHANNELS: 'none' },
    ]
    for (const env of envs) {
      const { has, warnings } = first(env)
      expect(['slack', 'telegram', 'email', 'api'].some(has), JSON.stringify(env)).toBe(false)
      expect(warnings).toEqual([])
    }
  })

  it('`all`: every spooled channel, never the API', () => {
    const { has, warnings } = first({ QUEUE_FIRST_CHANNELS: 'all' })
    expect([has('slack'), has('line'), has('email'), has('brand-new'), has('api')]).toEqual([
      true,
      true,
      true,
      true,
      false,
    ])
    expect(warnings).toEqual([])
    const spooled = first({ QUEUE_FIRST_CHANNELS: 'all', SPOOL_CHANNELS: 'slack' })
    expect([spooled.has('slack'), spooled.has('line')]).toEqual([true, false])
  })

  it('a list: those channels; api, a channel not spooled and a typo are named in warnings', () => {
    const { has, warnings } = first({ QUEUE_FIRST_CHANNELS: 'slack,line,api' })
    expect([has('slack'), has('line'), has('api'), has('telegram')]).toEqual([
      true,
      true,
      false,
      false,
    ])
    expect(warnings).toEqual([
      'QUEUE_FIRST_CHANNELS names api: its requests are never queued first (a 201 carries the row)',
    ])
    const notSpooled = first({ QUEUE_FIRST_CHANNELS: 'slack,line', SPOOL_CHANNELS: 'slack' })
    expect(notSpooled.has('line')).toBe(false)
    expect(notSpooled.warnings).toEqual([
      'QUEUE_FIRST_CHANNELS names channels SPOOL_CHANNELS does not spool: line',
    ])
    expect(first({ QUEUE_FIRST_CHANNELS: 'slak' }).warnings).toEqual([
      expect.stringMatching(/^QUEUE_FIRST_CHANNELS names unknown channels; known: slack, /),
    ])
  })
})
