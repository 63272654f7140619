/**
 * API keys (worker/api/auth.ts, worker/api/settings.ts): only hashes are configured; the key
 * offered is hashed and compared; a malformed API_KEYS warns without naming a hash.
 */
import { describe, expect, it } from 'vitest'
import { API_TEST_KEY, API_TEST_KEY_SHA256, vendorBindings } from '../../local/vendor-deliveries'
import { sha256Hex } from '../../shared/crypto'
import { apiTenant } from '../../worker/api/auth'
import { parseApiSettings } from '../../worker/api/settings'

describe('API keys', () => {
  it("the tests' key and the hash their gateways are configured with are one pair", async () => {
    expect(await sha256Hex(API_TEST_KEY)).toBe(API_TEST_KEY_SHA256)
    const settings = parseApiSettings(vendorBindings())
    expect(await apiTenant(settings, `Bearer ${API_TEST_KEY}`)).toBe('test-tenant')
  })

  it('a key is its tenant; several keys a tenant; anything else no tenant', async () => {
    const keys = JSON.stringify({
      [await sha256Hex('new')]: 'acme',
      [(await sha256Hex('old')).toUpperCase()]: 'acme',
    })
    const settings = parseApiSettings({ API_KEYS: keys })
    expect(settings.warnings).toEqual([])
    expect(await apiTenant(settings, 'Bearer new')).toBe('acme')
    expect(await apiTenant(settings, 'bearer old')).toBe('acme')
    for (const header of [undefined, '', 'Bearer', 'Bearer other', 'Basic new', 'Bearer new x']) {
      expect(await apiTenant(settings, header)).toBeNull()
    }
  })

  it('entries that are no hash or no tenant are skipped; the warning names neither', async () => {
    const hash = await sha256Hex('k')
    const settings = parseApiSettings({
      API_KEYS: JSON.stringify({ 'plain-key-pasted': 'acme', [hash]: 'bad:tenant' }),
    })
    expect(settings.keys.size).toBe(0)
    expect(settings.warnings).toHaveLength(2)
    expect(settings.warnings.join(' ')).not.toMatch(/plain-key-pasted|[0-9a-f]{64}/)
    expect(parseApiSettings({ API_KEYS: 'not json' }).warnings).toHaveLength(1)
  })

  it('one hash twice (lower- and upper-case hex): the first entry keeps the key, with a warning naming no hash', async () => {
    const hash = await sha256Hex('shared-key')
    const settings = parseApiSettings({
      API_KEYS: JSON.stringify({ [hash]: 'acme', [hash.toUpperCase()]: 'globex' }),
    })
    expect(await apiTenant(settings, 'Bearer shared-key')).toBe('acme')
    expect(settings.keys.size).toBe(1)
    expect(settings.warnings).toHaveLength(1)
    expect(settings.warnings[0]).toMatch(/entry 2 \(globex\).*first is used/)
    expect(settings.warnings.join(' ')).not.toMatch(/[0-9a-fA-F]{64}/)
  })
  it('one hash twice, written the same (JSON.parse would keep the last): the first entry keeps the key', async () => {
    const hash = await sha256Hex('pasted-twice')
    const other = await sha256Hex('another-key')
    const settings = parseApiSettings({
      API_KEYS: `{ "${hash}": "acme", "${other}": "initech",\n  "${hash}" : "globex" }`,
    })
    expect(await apiTenant(settings, 'Bearer pasted-twice')).toBe('acme')
    expect(await apiTenant(settings, 'Bearer another-key')).toBe('initech')
    expect(settings.keys.size).toBe(2)
    expect(settings.warnings).toEqual([expect.stringMatching(/entry 3 \(globex\).*first is used/)])
  })

  it('values that are not all strings: read as parsed, each refused alone', async () => {
    const hash = await sha256Hex('k2')
    const settings = parseApiSettings({
      API_KEYS: JSON.stringify({ [hash]: 'acme', nested: { [hash]: 'globex' } }),
    })
    expect(await apiTenant(settings, 'Bearer k2')).toBe('acme')
    expect(settings.keys.size).toBe(1)
    expect(settings.warnings).toHaveLength(1)
  })
})
