import { describe, expect, it } from 'vitest'
import { canonicalMailbox, readMailboxAliases } from '../../email/mailbox'

describe('canonicalMailbox', () => {
  it('lower-cases the address and strips the sub-address', () => {
    expect(canonicalMailbox('<Support+Billing@Inbound.Example>')).toBe('support@inbound.example')
    expect(canonicalMailbox('support+a+b@x.example')).toBe('support@x.example')
    expect(canonicalMailbox('support@x.example')).toBe('support@x.example')
  })

  it('keeps `-` and `.` (ordinary characters of real addresses) and a leading `+`', () => {
    expect(canonicalMailbox('first-last@x.example')).toBe('first-last@x.example')
    expect(canonicalMailbox('first.last@x.example')).toBe('first.last@x.example')
    expect(canonicalMailbox('+tag@x.example')).toBe('+tag@x.example')
  })

  it('maps a configured alias (with or without a sub-address) to its inbox; null for no address', () => {
    const aliases = readMailboxAliases(
      { EMAIL_MAILBOX_ALIASES: '{"Help@X.example": "support+ignored@x.example"}' },
      [],
    )
    expect(canonicalMailbox('help+urgent@x.example', aliases)).toBe('support@x.example')
    expect(canonicalMailbox('support@x.example', aliases)).toBe('support@x.example')
    expect(canonicalMailbox('not an address', aliases)).toBeNull()
  })
})

describe('readMailboxAliases', () => {
  const read = (value: string) => {
    const report: string[] = []
    return { aliases: readMailboxAliases({ EMAIL_MAILBOX_ALIASES: value }, report), report }
  }

  it('unset or empty: no aliases, no report', () => {
    expect(readMailboxAliases({}, [])).toEqual(new Map())
    expect(read(' ')).toEqual({ aliases: new Map(), report: [] })
  })

  it('refuses the whole setting for any bad entry, naming its position, never an address', () => {
    for (const value of [
      '[]',
      'not json',
      '"a@b"',
      '{"a@x.example": 1}',
      '{"nope": "a@x.example"}',
    ]) {
      const { aliases, report } = read(value)
      expect(aliases.size).toBe(0)
      expect(report).toHaveLength(1)
      expect(report[0]).toMatch(/^EMAIL_MAILBOX_ALIASES: /)
    }
    const chained = read('{"a@x.example": "b@x.example", "b@x.example": "c@x.example"}')
    expect(chained.aliases.size).toBe(0)
    expect(chained.report).toEqual([
      'EMAIL_MAILBOX_ALIASES: entry 1 maps to an alias, not a mailbox',
    ])
    expect(chained.report.join()).not.toContain('x.example')
  })
})
