/**
 * The operator token (shared/operator-token.ts): a bearer check in constant time, no route
 * without a token, and no route with one too short to resist guessing; and the console's limit on
 * refused credentials (origin/sign-in-limit.ts).
 */
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../origin/config'
import { signInLimit } from '../../origin/sign-in-limit'
import { operatorAccess, operatorTokenProblem } from '../../shared/operator-token'

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

describe('refused credentials', () => {
  it('past the limit an address waits for its window to end; other addresses do not', () => {
    const limit = signInLimit(2, 60_000)
    expect(limit.begin('10.0.0.1', 0).retryAfter).toBe(0)
    expect(limit.begin('10.0.0.1', 1_000).retryAfter).toBe(0)
    expect(limit.begin('10.0.0.1', 1_000).retryAfter).toBe(59)
    expect(limit.begin('10.0.0.2', 1_000).retryAfter).toBe(0)
    expect(limit.begin('10.0.0.1', 60_000).retryAfter).toBe(0)
  })

  it('a try counts from its start, before its credential is read; a right one is taken back', () => {
    const limit = signInLimit(2, 60_000)
    // Two tries in flight at once fill the window: a third is refused before either ends.
    const first = limit.begin('10.0.0.1', 0)
    const second = limit.begin('10.0.0.1', 0)
    expect(limit.begin('10.0.0.1', 0).retryAfter).toBe(60)
    first.passed()
    first.passed()
    expect(limit.begin('10.0.0.1', 0).retryAfter).toBe(0)
    expect(limit.begin('10.0.0.1', 0).retryAfter).toBe(60)
    // A try that outlived its window takes nothing from the next one.
    second.passed()
    const next = limit.begin('10.0.0.1', 60_000)
    expect(next.retryAfter).toBe(0)
    expect(limit.begin('10.0.0.1', 60_000).retryAfter).toBe(0)
    expect(limit.begin('10.0.0.1', 60_000).retryAfter).toBe(60)
  })
})
