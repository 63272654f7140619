/**
 * The soak's pure parts: the seeded source and the two schedules drawn from it (same seed, same
 * events and faults; faults overlap and all heal in time), and the checker's verdicts on rows it
 * is handed (a checker that cannot find a loss proves nothing).
 */
import { describe, expect, it } from 'vitest'
import { judge, type Row } from '../../soak/checker'
import { planEvents } from '../../soak/generator'
import { MessageMaker, SOAK_CHANNELS, type SoakMessage } from '../../soak/messages'
import { FAULT_KINDS, planFaults } from '../../soak/nemesis'
import { Rng } from '../../soak/rng'

const LOAD = { rate: 50, durationMs: 60_000, channels: SOAK_CHANNELS }
const FAULTS = { warmupMs: 2_000, healByMs: 57_000 }

describe('the seeded schedules', () => {
  it('the same seed gives the same events and faults; another seed other ones', () => {
    const plan = (seed: string) => ({
      events: planEvents(new Rng(seed).stream('events'), LOAD),
      faults: planFaults(new Rng(seed).stream('faults'), FAULTS),
    })
    expect(plan('abc')).toEqual(plan('abc'))
    expect(plan('abc').events).not.toEqual(plan('abd').events)
    expect(plan('abc').faults).not.toEqual(plan('abd').faults)
  })

  it('the fault schedule does not move when the load rate changes', () => {
    const rng = new Rng('rate')
    const events = planEvents(rng.stream('events'), { ...LOAD, rate: 10 })
    expect(events).toHaveLength(600)
    expect(planFaults(rng.stream('faults'), FAULTS)).toEqual(
      planFaults(new Rng('rate').stream('faults'), FAULTS),
    )
  })

  it('a fifth to a third of the events send a message again; edits, deletes and forgeries are in', () => {
    const events = planEvents(new Rng('mix').stream('events'), LOAD)
    expect(events).toHaveLength(3_000)
    const share = (kinds: string[]) =>
      events.filter((e) => kinds.includes(e.kind)).length / events.length
    expect(share(['replay', 'copies', 'fresh-id'])).toBeGreaterThan(0.2)
    expect(share(['replay', 'copies', 'fresh-id'])).toBeLessThan(0.3)
    for (const kind of ['edit', 'delete', 'forged']) expect(share([kind])).toBeGreaterThan(0)
    for (const channel of SOAK_CHANNELS) {
      expect(events.some((e) => e.kind === 'new' && e.channel === channel)).toBe(true)
    }
    // Every event about a message comes after the event that made it.
    const madeAt = new Map<number, number>()
    for (const e of events) {
      if (e.kind === 'new' || e.kind === 'forged') madeAt.set(e.message, e.n)
      else expect(madeAt.get(e.message)).toBeLessThan(e.n)
    }
  })

  it('faults overlap across pieces, never on one piece, and all are over before the heal time', () => {
    for (const seed of ['a', 'b', 'c', 'd']) {
      const faults = planFaults(new Rng(seed).stream('faults'), FAULTS)
      expect(faults.length).toBeGreaterThan(15)
      const overlaps = (a: (typeof faults)[number], b: (typeof faults)[number]) =>
        a.at < b.at + b.durationMs && b.at < a.at + a.durationMs
      let across = 0
      for (const [i, a] of faults.entries()) {
        expect(a.at).toBeGreaterThanOrEqual(FAULTS.warmupMs)
        expect(a.at + a.durationMs).toBeLessThanOrEqual(FAULTS.healByMs)
        for (const b of faults.slice(i + 1)) {
          if (!overlaps(a, b)) continue
          expect(a.piece, `faults ${a.n} and ${b.n} on one piece at once`).not.toBe(b.piece)
          across++
        }
      }
      expect(across).toBeGreaterThan(5)
    }
  })

  it('every fault kind of the nemesis is drawn over a long run, the queue consumer failing included', () => {
    const long = { warmupMs: 5_000, healByMs: 600_000 }
    const drawn = new Set(planFaults(new Rng('kinds').stream('faults'), long).map((f) => f.kind))
    expect([...drawn].sort()).toEqual([...FAULT_KINDS].sort())
  })
})

describe('the checker', () => {
  const maker = new MessageMaker('unit')
  const accepted = (message: SoakMessage, outcome: number | 'stored' = 200) => {
    message.attempts.push({ event: 1, delivery: 'original', outcome, faults: [] })
    return message
  }
  const row = (message: SoakMessage, fields: Partial<Row> = {}): Row => ({
    marker: message.marker,
    body: message.text(),
    deleted: false,
    outbox: 1,
    ...fields,
  })

  it('one row with its outbox row per message is clean', () => {
    const a = accepted(maker.create('slack', 1))
    const b = accepted(maker.create('gmail', 2), 'stored')
    const result = judge([a, b], [row(a), row(b)])
    expect(result).toMatchObject({ lost: 0, doubled: 0, leaked: 0, twilio5xx: 0 })
  })

  it('a message with no row, or without its outbox row, is lost, answered 2xx or not', () => {
    const answered = accepted(maker.create('telegram', 0))
    const noOutbox = accepted(maker.create('email', 0))
    const gaveUp = maker.create('sms', 0)
    gaveUp.attempts.push({ event: 2, delivery: 'original', outcome: 503, faults: ['origin-kill'] })
    const result = judge([answered, noOutbox, gaveUp], [row(noOutbox, { outbox: 0 })])
    expect(result.lost).toBe(3)
    expect(result.twilio5xx).toBe(1)
    // A copy answered 503 while another copy got the 200: Twilio was told ok once, that is enough.
    const taken = accepted(maker.create('whatsapp', 0))
    taken.attempts.push({ event: 3, delivery: 'original', outcome: 503, faults: [] })
    expect(judge([taken], [row(taken)]).twilio5xx).toBe(0)
    expect(result.verdicts.map((v) => v.problem)).toEqual([
      expect.stringMatching(/^lost .* 0 rows/),
      expect.stringMatching(/^lost .* 0 outbox rows/),
      expect.stringMatching(/^lost .*answers 503/),
    ])
  })

  it('a second row or a second outbox row is doubled', () => {
    const twice = accepted(maker.create('whatsapp', 3))
    const twoOutbox = accepted(maker.create('slack', 3))
    const result = judge(
      [twice, twoOutbox],
      [row(twice), row(twice), row(twoOutbox, { outbox: 2 })],
    )
    expect(result).toMatchObject({ lost: 0, doubled: 2 })
  })

  it('an edit the row does not show, or a delete it does not, is lost', () => {
    const edited = accepted(maker.create('slack', 4))
    const before = edited.text()
    edited.edit()
    edited.edit()
    const deleted = accepted(maker.create('slack', 4))
    deleted.delete()
    expect(judge([edited], [row(edited, { body: before })]).lost).toBe(1)
    expect(judge([edited], [row(edited)]).lost).toBe(0)
    expect(judge([deleted], [row(deleted)]).lost).toBe(1)
    expect(judge([deleted], [row(deleted, { deleted: true })]).lost).toBe(0)
  })

  it('a delete that overtook its message is counted as overtaken, and lost if its row is not deleted', () => {
    const deleted = accepted(maker.create('slack', 6))
    deleted.delete()
    const ignored = new Set([deleted.marker])
    // Its tombstone applied: the row landed deleted.
    expect(judge([deleted], [row(deleted, { deleted: true })], ignored)).toMatchObject({
      lost: 0,
      overtaken: 1,
    })
    // The row left undeleted: the delete is lost (no race excuses it since the message-key lock).
    expect(judge([deleted], [row(deleted)], ignored)).toMatchObject({ lost: 1, overtaken: 1 })
    // Without its row the message is lost all the same.
    expect(judge([deleted], [], ignored).lost).toBe(1)
  })

  it('a forged message answered 2xx or stored leaks', () => {
    const refused = maker.create('telegram', 5, { forged: true })
    refused.attempts.push({ event: 3, delivery: 'original', outcome: 401, faults: [] })
    const stored = maker.create('slack', 5, { forged: true })
    expect(judge([refused], []).leaked).toBe(0)
    expect(judge([refused, stored], [row(stored)]).leaked).toBe(1)
    expect(judge([accepted(stored)], [row(stored)]).leaked).toBe(2)
  })
})
