/**
 * Single sign-on for the console with Cloudflare Access (origin/console/access.ts, sign-in.tsx),
 * against real Postgres and a key set served on this machine
 * (test/origin/console/support/access-team.ts): a valid assertion signs in, with its email in the
 * audit and the role its email, domain or group maps to; a wrong audience, an expired one, a
 * foreign key, a wrong issuer, `alg: none` or an HMAC made with the public key do not, whoever
 * sends them straight to the origin; an Access session holds only while each request carries the
 * same person's valid assertion; refused assertions count in the limit on refused credentials; keys
 * Access cannot serve are a 503.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConsoleDeps } from '../../../origin/console/app'
import { loadConsoleConfig } from '../../../origin/console/settings'
import { openDatabase } from '../../../origin/db'
import { silentLogger } from '../../../origin/log'
import { signInLimit } from '../../../origin/sign-in-limit'
import { mountedConsole } from '../../support/console-app'
import { fileTestbed } from '../../support/for-file'
import { TEST_DATABASE_DRIVER } from '../../support/origin'
import { type AccessTeam, startAccessTeam, TEST_AUD } from './support/access-team'

const BASE = 'http://console.test/console'
const HEADER = 'cf-access-jwt-assertion'
const tb = fileTestbed()
let team: AccessTeam
let db: ReturnType<typeof openDatabase>

beforeAll(async () => {
  team = await startAccessTeam()
  db = openDatabase(
    {
      databaseUrl: tb.databaseUrl,
      databaseDriver: TEST_DATABASE_DRIVER,
      neonWsProxy: tb.wsProxy,
      dbQueryTimeoutMs: 5000,
      dbConnectTimeoutMs: 1000,
      originTimeoutMs: 2000,
    },
    4,
    silentLogger,
  )
})

afterAll(async () => {
  await db?.close()
  await team?.close()
})

/** A console of its own (its own limit and key cache), configured as the origin reads its env. */
function accessConsole(env: Record<string, string> = {}, deps: Partial<ConsoleDeps> = {}) {
  const config = loadConsoleConfig({
    CONSOLE_ACCESS_TEAM_DOMAIN: team.teamDomain,
    CONSOLE_ACCESS_AUD: `other-application-aud,${TEST_AUD}`,
    CONSOLE_ACCESS_OPERATORS: 'ada@customer-support.example,group:gateway-oncall',
    CONSOLE_ACCESS_VIEWERS: '@customer-support.example',
    ...env,
  })
  const app = mountedConsole({ db, logger: silentLogger, config, ...deps })
  const get = (path: string, headers: Record<string, string> = {}) =>
    app.request(`${BASE}${path}`, { headers })
  return { app, get }
}

const cookieOf = (res: Response) => (res.headers.get('set-cookie') ?? '').split(';')[0] as string

async function lastSignIn(): Promise<{ actor: string; result: string } | undefined> {
  const { rows } = await tb.sql.query<{ actor: string; result: string }>(
    `SELECT actor, result FROM console_audit WHERE action = 'sign_in' ORDER BY id DESC LIMIT 1`,
  )
  return rows[0]
}

describe('a valid assertion signs in', () => {
  it('the first page: a session for that person, the role of their email, their email in the audit', async () => {
    const { get } = accessConsole()
    const res = await get('', { [HEADER]: await team.assertion() })
    expect(res.status).toBe(200)
    const page = await res.text()
    expect(page).toContain('ada@customer-support.example (operator)')
    expect(cookieOf(res)).toMatch(/^console_session=/)
    expect(await lastSignIn()).toEqual({
      actor: 'ada@customer-support.example',
      result: 'ok: Cloudflare Access, operator',
    })
  })

  it('a domain makes a viewer, a group an operator; nobody named: 403, no session', async () => {
    const { get } = accessConsole()
    const viewer = await get('', {
      [HEADER]: await team.assertion({ email: 'Vera@Customer-Support.example' }),
    })
    expect(await viewer.text()).toContain('vera@customer-support.example (viewer)')
    const oncall = await get('', {
      [HEADER]: await team.assertion({
        email: 'sam@contractor.example',
        claims: { custom: { groups: ['gateway-oncall'] } },
      }),
    })
    expect(await oncall.text()).toContain('sam@contractor.example (operator)')
    const stranger = await get('', {
      [HEADER]: await team.assertion({ email: 'eve@elsewhere.example' }),
    })
    expect(stranger.status).toBe(403)
    expect(await stranger.text()).toContain('eve@elsewhere.example, who has no console role')
    expect(stranger.headers.get('set-cookie')).toBeNull()
  })

  it('the login page with an assertion signs in and goes to the overview', async () => {
    const { get } = accessConsole()
    const res = await get('/login', { [HEADER]: await team.assertion() })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/console')
    expect(cookieOf(res)).toMatch(/^console_session=/)
  })
})

describe('what does not sign in, sent straight to the origin', () => {
  /** An unsigned token (`alg: none`) and an HMAC keyed with the team's public key. */
  async function forgeries(): Promise<string[]> {
    const valid = await team.assertion()
    const [, payload] = valid.split('.')
    const b64 = (s: string) => Buffer.from(s).toString('base64url')
    const none = `${b64('{"alg":"none","typ":"JWT"}')}.${payload}.`
    const keySet = (await (await fetch(`${team.teamDomain}/cdn-cgi/access/certs`)).json()) as {
      keys: { n: string }[]
    }
    const { createHmac } = await import('node:crypto')
    const head = b64('{"alg":"HS256","kid":"team-key-1","typ":"JWT"}')
    const mac = createHmac('sha256', keySet.keys[0]?.n ?? '')
      .update(`${head}.${payload}`)
      .digest('base64url')
    return [none, `${head}.${payload}.${mac}`, `${valid.slice(0, -4)}AAAA`, 'not-a-jwt']
  }

  it.each([
    ['a wrong audience', { aud: 'the-aud-of-another-application' }],
    ['an expired one', { expiresIn: -120 }],
    ['a foreign key (under the team key id)', { foreignKey: true }],
    ['a foreign key (under a key id of its own)', { foreignKey: true, kid: 'attacker-key' }],
    ['a wrong issuer', { iss: 'https://attacker.cloudflareaccess.com' }],
    ['no email (a service token)', { email: '' }],
  ])('%s: 401 with the reason on the page, no session, nothing audited', async (_, options) => {
    const { get } = accessConsole()
    const before = await lastSignIn()
    const res = await get('', { [HEADER]: await team.assertion(options) })
    expect(res.status).toBe(401)
    expect(await res.text()).toContain('does not sign in')
    expect(res.headers.get('set-cookie')).toBeNull()
    expect(await lastSignIn()).toEqual(before)
  })

  it('alg none, an HMAC keyed with the public key, a broken signature, garbage: 401 each', async () => {
    const { get } = accessConsole()
    for (const forged of await forgeries()) {
      const res = await get('', { [HEADER]: forged })
      expect(res.status).toBe(401)
      expect(res.headers.get('set-cookie')).toBeNull()
    }
  })

  it('a header with Access off is not read: the login page', async () => {
    const { get } = accessConsole({
      CONSOLE_ACCESS_TEAM_DOMAIN: '',
      CONSOLE_ACCESS_AUD: '',
      CONSOLE_ACCESS_OPERATORS: '',
      CONSOLE_ACCESS_VIEWERS: '',
    })
    const res = await get('', { [HEADER]: await team.assertion() })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/console/login')
  })
})

describe('an Access session', () => {
  it('holds while each request carries the same person: without it, or with another, it ends', async () => {
    const { get } = accessConsole()
    const ada = await team.assertion()
    const cookie = cookieOf(await get('', { [HEADER]: ada }))
    expect((await get('', { cookie, [HEADER]: ada })).status).toBe(200)
    // The cookie alone, sent past Access (stolen, or Access turned off for the path): it ends.
    const bare = await get('', { cookie })
    expect(bare.status).toBe(303)
    expect(bare.headers.get('location')).toBe('/console/login')
    expect((await get('', { cookie, [HEADER]: ada })).headers.get('set-cookie')).toMatch(
      /^console_session=[^;]+/,
    )
    // Another person's assertion with Ada's cookie: Ada's session ends, Vera is signed in.
    const second = cookieOf(await get('', { [HEADER]: ada }))
    const vera = await team.assertion({ email: 'vera@customer-support.example' })
    const switched = await get('', { cookie: second, [HEADER]: vera })
    expect(await switched.text()).toContain('vera@customer-support.example (viewer)')
    expect((await get('', { cookie: second, [HEADER]: ada })).headers.get('set-cookie')).toMatch(
      /^console_session=/,
    )
  })

  it('signing out ends it and goes to Access’s own sign-out', async () => {
    const { app, get } = accessConsole()
    const ada = await team.assertion()
    const res = await get('', { [HEADER]: ada })
    const cookie = cookieOf(res)
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await res.text())?.[1] as string
    const out = await app.request(`${BASE}/logout`, {
      method: 'POST',
      headers: { cookie, [HEADER]: ada, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf }),
    })
    expect(out.status).toBe(303)
    expect(out.headers.get('location')).toBe('/cdn-cgi/access/logout')
    const { rows } = await tb.sql.query(
      `SELECT 1 FROM console_sessions WHERE token_name = 'ada@customer-support.example'
          AND token_hash = encode(sha256($1::bytea), 'hex')`,
      [cookie.split('=')[1]],
    )
    expect(rows).toHaveLength(0)
  })
})

describe('limits and failures', () => {
  it('refused assertions count as refused credentials: past the limit even a valid one is 429', async () => {
    const { get } = accessConsole({}, { signInLimit: signInLimit(3, 60_000) })
    for (let i = 0; i < 3; i++) {
      expect((await get('', { [HEADER]: await team.assertion({ foreignKey: true }) })).status).toBe(
        401,
      )
    }
    const limited = await get('', { [HEADER]: await team.assertion() })
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it('keys Access cannot serve: 503, nobody signed in, no guess counted', async () => {
    const { get } = accessConsole({}, { signInLimit: signInLimit(1, 60_000) })
    team.failKeys(503)
    try {
      for (let i = 0; i < 3; i++) {
        const res = await get('', { [HEADER]: await team.assertion() })
        expect(res.status).toBe(503)
        expect(res.headers.get('set-cookie')).toBeNull()
      }
    } finally {
      team.failKeys(null)
    }
    expect((await get('', { [HEADER]: await team.assertion() })).status).toBe(200)
  })

  it('the keys are fetched once and cached; a forged key id does not fetch them again', async () => {
    const { get } = accessConsole()
    const before = team.keyFetches
    for (let i = 0; i < 3; i++) await get('', { [HEADER]: await team.assertion() })
    for (let i = 0; i < 5; i++) {
      await get('', { [HEADER]: await team.assertion({ foreignKey: true, kid: `forged-${i}` }) })
    }
    expect(team.keyFetches - before).toBe(1)
  })
})
