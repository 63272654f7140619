/**
 * The connections phase's arithmetic and its quick sealer (bench/connection-figures.ts,
 * bench/connection-records.ts): a case's CPU per request and percentiles, the 10 % goal's edge,
 * the KV bytes of a record and its index entries, the production bound, and the records of the
 * 100,000 opening with the Worker's own `open` (only under their own id and field).
 */
import { describe, expect, it } from 'vitest'
import {
  caseFigure,
  changeFigure,
  compare,
  describeComparison,
  kindBytes,
  productionBoundS,
} from '../../bench/connection-figures'
import { fastSeal, lineBots } from '../../bench/connection-records'
import { type EdgeConnection, secretAad } from '../../contract/connection'
import { indexKeys } from '../../origin/connections/edge-record'
import { EnvelopeError, importKeyRing, newKekEntry, open } from '../../shared/envelope'

const sample = (ms: number, status = 200) => ({ ms, status })

describe('a case and two against the goal', () => {
  it('CPU per request over all rounds, each round apart, nearest-rank p50 and p99, statuses', () => {
    const samples = [...Array.from({ length: 99 }, (_, i) => sample(i + 1)), sample(500, 503)]
    const rounds = [
      { cpuMs: 30, requests: 50 },
      { cpuMs: 20, requests: 50 },
    ]
    const f = caseFigure('route-1', 'one', samples, rounds)
    expect(f.cpuUsPerRequest).toBe(500)
    expect(f.roundsCpuUs).toEqual([600, 400])
    expect(f.p50Ms).toBe(50)
    expect(f.p99Ms).toBe(99)
    expect(f.statuses).toEqual({ 200: 99, 503: 1 })
  })

  it('within the goal up to 1.10× on CPU and on p50 alike; over on either is not', () => {
    const base = caseFigure('a', 'a', [sample(1)], [{ cpuMs: 100, requests: 100 }])
    const at = caseFigure('b', 'b', [sample(1.1)], [{ cpuMs: 110, requests: 100 }])
    const cpuOver = caseFigure('c', 'c', [sample(1)], [{ cpuMs: 112, requests: 100 }])
    const p50Over = caseFigure('d', 'd', [sample(1.2)], [{ cpuMs: 100, requests: 100 }])
    expect(compare(at, base)).toMatchObject({ cpuRatio: 1.1, p50Ratio: 1.1, withinGoal: true })
    expect(compare(cpuOver, base).withinGoal).toBe(false)
    expect(compare(p50Over, base).withinGoal).toBe(false)
    expect(describeComparison(compare(cpuOver, base))).toContain('NOT within the 10 % goal')
  })

  it('a change: median and largest of the trials; production adds the memo to KV’s 60 s', () => {
    expect(changeFigure(2, [900, 100, 1_800.4])).toEqual({
      memoSeconds: 2,
      trialsMs: [900, 100, 1_800],
      medianMs: 900,
      maxMs: 1_800,
    })
    expect(productionBoundS(30)).toBe(90)
    expect(productionBoundS(5, 90)).toBe(95)
  })
})

describe('KV bytes per connection', () => {
  const record = (over: Partial<EdgeConnection>): EdgeConnection => ({
    v: 1,
    id: 'c_aaaaaaaaaaaaaaaaaaaaaaaaaa',
    channel: 'twilio',
    account: 'AC0123',
    ids: [],
    settings: {},
    status: 'active',
    version: 1,
    secrets: [],
    ...over,
  })

  it('the record’s JSON in UTF-8 bytes and its key; index entries by account or by id', () => {
    const twilio = record({ settings: { note: 'é' } })
    const b = kindBytes(twilio)
    expect(b.valueBytes).toBe(JSON.stringify(twilio).length + 1)
    expect(b.keyBytes).toBe('conn:c_aaaaaaaaaaaaaaaaaaaaaaaaaa'.length)
    // Twilio's shared path names its account (the registry is asked before the variables).
    expect(b.indexEntries).toBe(1)
    expect(indexKeys(record({ channel: 'line', account: 'Uabc' }))).toEqual(['idx:line:Uabc'])
    const messenger = record({ channel: 'messenger', account: '1', ids: ['22', '333'] })
    expect(indexKeys(messenger)).toEqual(['idx:messenger:22', 'idx:messenger:333'])
    const mb = kindBytes(messenger)
    // Each entry: its key, and the connection id as its value.
    expect(mb.indexBytes).toBe('idx:messenger:22'.length + 'idx:messenger:333'.length + 2 * 28)
    expect(mb.totalBytes).toBe(mb.valueBytes + mb.keyBytes + mb.indexBytes)
  })
})

describe('the quick sealer of the 100,000', () => {
  it('opens with the envelope’s own open, to the secret, under its own id and field only', async () => {
    const keks = newKekEntry('bench')
    const ring = await importKeyRing(keks)
    if (!ring) throw new Error('no ring')
    const [bot] = lineBots(keks, 1)
    const secret = bot?.record.secrets[0]
    if (!bot || !secret) throw new Error('no bot')
    expect(await open(ring, secret.sealed, secretAad(bot.record.id, 'channel_secret', 'k1'))).toBe(
      bot.secret,
    )
    await expect(
      open(ring, secret.sealed, secretAad('c_bbbbbbbbbbbbbbbbbbbbbbbbbb', 'channel_secret', 'k1')),
    ).rejects.toBeInstanceOf(EnvelopeError)
    const other = await importKeyRing(newKekEntry('bench'))
    if (!other) throw new Error('no ring')
    const sealed = fastSeal(keks, 'x', 'aad')
    await expect(open(other, sealed, 'aad')).rejects.toBeInstanceOf(EnvelopeError)
  })
})
