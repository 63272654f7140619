/**
 * The console's Cloudflare Access settings (origin/console/settings.ts): which team domains the
 * console trusts keys from, what must come with one, and how emails, domains and groups map to
 * roles (origin/console/access.ts's roleOf). Pure logic; the sign-in itself is
 * test/origin/console/access.pg.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../../origin/config'
import { roleOf } from '../../../origin/console/access'
import { loadConsoleConfig } from '../../../origin/console/settings'

const ACCESS = {
  CONSOLE_ACCESS_TEAM_DOMAIN: 'acme.cloudflareaccess.com',
  CONSOLE_ACCESS_AUD: 'aud-1, aud-2',
  CONSOLE_ACCESS_OPERATORS: 'Ada@Acme.example, group:oncall',
  CONSOLE_ACCESS_VIEWERS: '@acme.example',
}

const problems = (env: Record<string, string>): readonly string[] => {
  try {
    loadConsoleConfig(env)
    return []
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
}

describe('CONSOLE_ACCESS_*', () => {
  it('a team name or its https URL: the issuer and the published keys of that team', () => {
    for (const team of ['acme.cloudflareaccess.com', 'https://acme.cloudflareaccess.com/']) {
      expect(loadConsoleConfig({ ...ACCESS, CONSOLE_ACCESS_TEAM_DOMAIN: team }).access).toEqual({
        issuer: 'https://acme.cloudflareaccess.com',
        certsUrl: 'https://acme.cloudflareaccess.com/cdn-cgi/access/certs',
        audiences: ['aud-1', 'aud-2'],
        operators: [
          { kind: 'email', email: 'ada@acme.example' },
          { kind: 'group', group: 'oncall' },
        ],
        viewers: [{ kind: 'domain', domain: 'acme.example' }],
      })
    }
    expect(loadConsoleConfig({}).access).toBeNull()
  })

  it.each([
    'http://acme.cloudflareaccess.com',
    'https://acme.cloudflareaccess.com.attacker.example',
    'https://keys.attacker.example',
    'https://acme.cloudflareaccess.com/cdn-cgi/access/certs',
    'http://10.0.0.5:8080',
  ])('no keys from anywhere else: %s is refused', (team) => {
    expect(problems({ ...ACCESS, CONSOLE_ACCESS_TEAM_DOMAIN: team })).toEqual([
      'CONSOLE_ACCESS_TEAM_DOMAIN must be https://<team>.cloudflareaccess.com (or a loopback URL for a local key set)',
    ])
  })

  it('a loopback key set (a local try, the tests) is accepted', () => {
    const env = { ...ACCESS, CONSOLE_ACCESS_TEAM_DOMAIN: 'http://127.0.0.1:9999' }
    expect(loadConsoleConfig(env).access?.certsUrl).toBe(
      'http://127.0.0.1:9999/cdn-cgi/access/certs',
    )
  })

  it('half a configuration, or nobody named, stops the origin saying what is missing', () => {
    expect(problems({ ...ACCESS, CONSOLE_ACCESS_AUD: '' })).toEqual([
      'CONSOLE_ACCESS_AUD is required with CONSOLE_ACCESS_TEAM_DOMAIN',
    ])
    expect(problems({ CONSOLE_ACCESS_AUD: 'aud-1' })).toEqual([
      'CONSOLE_ACCESS_TEAM_DOMAIN is required with the other CONSOLE_ACCESS_* settings',
    ])
    expect(
      problems({ ...ACCESS, CONSOLE_ACCESS_OPERATORS: '', CONSOLE_ACCESS_VIEWERS: '' }),
    ).toEqual([
      'with CONSOLE_ACCESS_TEAM_DOMAIN, CONSOLE_ACCESS_OPERATORS or CONSOLE_ACCESS_VIEWERS must name someone',
    ])
    expect(problems({ ...ACCESS, CONSOLE_ACCESS_VIEWERS: 'not an entry' })).toEqual([
      'CONSOLE_ACCESS_VIEWERS entry 1 must be an email, @domain or group:<name>',
    ])
  })

  it('roles: an operator rule first, then a viewer rule; a domain is that domain only', () => {
    const access = loadConsoleConfig(ACCESS).access
    if (!access) throw new Error('configured above')
    expect(roleOf(access, 'ada@acme.example', [])).toBe('operator')
    expect(roleOf(access, 'bob@acme.example', [])).toBe('viewer')
    expect(roleOf(access, 'bob@acme.example', ['oncall'])).toBe('operator')
    expect(roleOf(access, 'eve@sub.acme.example', [])).toBeNull()
    expect(roleOf(access, 'eve@notacme.example', [])).toBeNull()
    expect(roleOf(access, 'eve@elsewhere.example', ['Oncall'])).toBeNull()
  })
})
