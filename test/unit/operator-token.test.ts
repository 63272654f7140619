/**
 * The operator token (contract/operator-token.ts): a bearer check in constant time, no route
 * without a token, and no route with one too short to resist guessing; and the console's limit on
 * refused sign-ins (origin/console/sign-in-limit.ts).
 */
import { describe, expect, it } from 'vitest'
import { operatorAccess, operatorTokenProblem } from '../../contract/operator-token'
import { ConfigError, loadConfig } from '../../origin/config'
import { signInLimit } from '../../origin/console/sign-in-limit'

const LONG = 'a-token-long-enough-to-guard'

describe('operator token', () => {
  it('opens its route to the exact bearer token only', () => {
    expect(operatorAccess(LONG, `Bearer ${LONG}`)).toEqual({ ok: true })
    expect(operatorAccess(LONG, `Bearer ${LONG}x`)).toMatchObject({ ok: false, status: 401 })
    expect(operatorAccess(LONG, undefined)).toMatchObject({ ok: false, status: 401 })
    expect(operatorAccess(undefined, `Bearer ${LONG}`)).toMatchObject({ ok: false, status: 404 })
  })

  it('a token under 16 characters serves no one (404) and stops the origin at start-up', () => {
    expect(operatorAccess('short-token', 'Bearer short-token')).toMatchObject({ status: 404 })
    expect(operatorTokenProblem('short-token')).toMatch(/16 characters/)
    expect(operatorTokenProblem(undefined)).toBeNull()
    expect(operatorTokenProblem(LONG)).toBeNull()
    const env = {
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x',
      ORIGIN_SHARED_SECRET: 'a-shared-secret-of-32-characters-',
    }
    expect(() => loadConfig({ ...env, OPERATOR_TOKEN: 'short-token' })).toThrow(ConfigError)
    expect(() => loadConfig({ ...env, OPERATOR_TOKEN: LONG })).not.toThrow()
  })
})

describe('refused sign-ins', () => {
  it('past the limit an address waits for its window to end; other addresses do not', () => {
    const limit = signInLimit(2, 60_000)
    limit.refused('10.0.0.1', 0)
    expect(limit.retryAfter('10.0.0.1', 1_000)).toBe(0)
    limit.refused('10.0.0.1', 1_000)
    expect(limit.retryAfter('10.0.0.1', 1_000)).toBe(59)
    expect(limit.retryAfter('10.0.0.2', 1_000)).toBe(0)
    expect(limit.retryAfter('10.0.0.1', 60_000)).toBe(0)
  })
})
