/**
 * Per-tenant verification as pure logic: which secrets a tenant id picks, and the check that a
 * delivery is keyed under the tenant whose secrets verified it.
 */
import { describe, expect, it } from 'vitest'
import {
  matchingTenant,
  type TenantSecrets,
  verifyForTenant,
} from '../../worker/channels/tenant-secrets'
import type { ChannelDelivery } from '../../worker/channels/types'
import { UnauthorizedError } from '../../worker/errors'
import { assertVerifiedTenant, type VerifiedRequest } from '../../worker/gateway'

const perTenant: TenantSecrets = {
  kind: 'per-tenant',
  byTenant: new Map([
    ['A', ['a1', 'a2']],
    ['B', ['b1']],
  ]),
}

describe('verifyForTenant', () => {
  it("offers the verifier only the named tenant's secrets", async () => {
    const offered: Array<readonly string[]> = []
    const verdict = await verifyForTenant(perTenant, 'B', async (secrets) => {
      offered.push(secrets)
      return { ok: true }
    })
    expect(verdict).toEqual({ ok: true, tenant: 'B' })
    expect(offered).toEqual([['b1']])
  })

  it.each([
    ['an unknown tenant', 'C'],
    ['no tenant', null],
  ])('refuses %s without calling the verifier', async (_name, tenant) => {
    let called = false
    const verdict = await verifyForTenant(perTenant, tenant, async () => {
      called = true
      return { ok: true }
    })
    expect(verdict).toEqual({ ok: false, reason: 'unknown_tenant' })
    expect(called).toBe(false)
  })

  it('passes a mismatch through, and shared secrets verify for no tenant in particular', async () => {
    const mismatch = await verifyForTenant(perTenant, 'A', async () => ({
      ok: false,
      reason: 'signature_mismatch',
    }))
    expect(mismatch).toEqual({ ok: false, reason: 'signature_mismatch' })
    const shared: TenantSecrets = { kind: 'shared', secrets: ['s'] }
    expect(await verifyForTenant(shared, 'anyone', async () => ({ ok: true }))).toEqual({
      ok: true,
      tenant: null,
    })
  })
})

describe('assertVerifiedTenant', () => {
  const request = (tenant: string | null, handshakeOnly = false) =>
    ({ tenant, handshakeOnly }) as VerifiedRequest<unknown>
  const record = (scope: string): ChannelDelivery => ({
    action: 'record',
    key: { namespace: 'slack-interaction', scope, id: '1' },
  })

  it('refuses a delivery keyed under another tenant than the one that verified', () => {
    expect(() => assertVerifiedTenant('slack', request('A'), record('B'))).toThrow(
      UnauthorizedError,
    )
    expect(() => assertVerifiedTenant('slack', request('A'), record('A'))).not.toThrow()
    expect(() => assertVerifiedTenant('slack', request(null), record('B'))).not.toThrow()
  })

  it('lets a handshake-only verification acknowledge, never claim or forward', () => {
    expect(() => assertVerifiedTenant('slack', request(null, true), record('A'))).toThrow(
      UnauthorizedError,
    )
    const ignore: ChannelDelivery = { action: 'ignore', reason: 'x' }
    expect(() => assertVerifiedTenant('slack', request(null, true), ignore)).not.toThrow()
  })

  it('checks every item of a batch: one item under another tenant refuses the whole request', () => {
    expect(() => assertVerifiedTenant('x', request('A'), [record('A'), record('A')])).not.toThrow()
    expect(() => assertVerifiedTenant('x', request('A'), [record('A'), record('B')])).toThrow(
      UnauthorizedError,
    )
  })

  it('a tenant with scopes (an app and its phone numbers) writes under those scopes only', () => {
    const app = { ...request('APP1'), scopes: new Set(['111', '222']) } as VerifiedRequest<unknown>
    expect(() => assertVerifiedTenant('x', app, [record('111'), record('222')])).not.toThrow()
    expect(() => assertVerifiedTenant('x', app, [record('111'), record('333')])).toThrow(
      UnauthorizedError,
    )
    expect(() => assertVerifiedTenant('x', app, record('APP1'))).toThrow(UnauthorizedError)
  })
})

describe('matchingTenant', () => {
  const byTenant = new Map([
    ['a', ['a1', 'a2']],
    ['b', ['b1']],
    ['c', ['a2']],
  ])
  const config = { kind: 'per-tenant' as const, byTenant }

  it("tries every tenant's secrets, the first listed match wins, none: undefined", async () => {
    const tried: string[] = []
    const matching = (secret: string) => async (list: readonly string[]) => {
      tried.push(...list)
      return list.includes(secret)
    }
    expect(await matchingTenant(config, matching('b1'))).toBe('b')
    expect(tried).toEqual(['a1', 'a2', 'b1', 'a2'])
    expect(await matchingTenant(config, matching('a2'))).toBe('a')
    expect(await matchingTenant(config, matching('zz'))).toBeUndefined()
    const shared = { kind: 'shared' as const, secrets: ['s'] }
    expect(await matchingTenant(shared, matching('s'))).toBeNull()
    expect(await matchingTenant(shared, matching('x'))).toBeUndefined()
  })
})
