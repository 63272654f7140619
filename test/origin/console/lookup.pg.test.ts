/**
 * The console's lookup finds an email by its Message-ID as a person copies it from a header
 * (`<id@Host>`), as well as bare, against real Postgres with a real parsed email stored by the
 * origin. The rest of lookup is in console.pg.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { finalizeEvent } from '../../../contract/event'
import { parseEmail } from '../../../email/parse'
import { rawEmail } from '../../../local/vendor-deliveries'
import { lookup, searchTerm } from '../../../origin/console/lookup'
import type { Queryable } from '../../../origin/db'
import { fileTestbed } from '../../support/for-file'

const tb = fileTestbed()
const db: Queryable = {
  query: async <R>(text: string, values?: unknown[]) =>
    (await tb.sql.query(text, values)).rows as R[],
}
const MAILBOX = 'support@inbound.example'

describe('lookup by Message-ID', () => {
  it('finds the email as a header spells its id, bracketed or bare, the domain in any case', async () => {
    const local = `Lookup.${Date.now()}`
    const raw = rawEmail({ to: MAILBOX, messageId: `${local}@Mail.Customer.Example` })
    const event = finalizeEvent((await parseEmail(raw, { mailbox: MAILBOX })).draft)
    expect((await tb.post(await event)).status).toBe(201)
    for (const q of [
      `<${local}@Mail.Customer.Example>`,
      ` <${local}@mail.customer.example> `,
      `${local}@MAIL.customer.example`,
      `${local}@mail.customer.example`,
    ]) {
      const found = await lookup(db, null, q)
      expect(found.messages.map((m) => m.channel)).toEqual(['email'])
      expect(found.messages[0]?.messageKey).toMatch(
        new RegExp(`:${local}@mail\\.customer\\.example$`),
      )
    }
  })

  it('leaves every other query as it is: vendor ids, whole keys, row ids', async () => {
    for (const q of ['EvLookup1', 'wamid.HBgL', '#42', 'dedup:email:a@b:from-sha256-x:Id@Host']) {
      expect(await searchTerm(q)).toBe(q)
    }
    expect(await searchTerm('<a@B.example>')).toBe('a@b.example')
  })
})
