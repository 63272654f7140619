/**
 * `npm run dev:sql`'s table: text reads left-aligned, a column of numbers right-aligned; and the
 * fault matrix's and soak's tables keep their first-left, rest-right layout.
 */
import { describe, expect, it } from 'vitest'
import { sqlTable } from '../../local/dev-sql'
import { markdownTable } from '../../local/markdown-table'

describe('dev:sql table', () => {
  it('text left, numbers right', () => {
    const table = sqlTable([
      { id: 7, channel: 'slack', body: 'hi', created_at: new Date('2026-12-01T10:00:00Z') },
      { id: 1234, channel: 'whatsapp-cloud', body: 'a longer body', created_at: null },
    ])
    expect(table.split('\n')).toEqual([
      '|   id | channel        | body          | created_at               |',
      '| ---: | :------------- | :------------ | :----------------------- |',
      '|    7 | slack          | hi            | 2026-12-01T10:00:00.000Z |',
      '| 1234 | whatsapp-cloud | a longer body |                          |',
    ])
  })

  it('the other tables keep their layout unless a column says otherwise', () => {
    const rows = [{ name: 'a', n: 1 }]
    const table = markdownTable<(typeof rows)[number]>(
      [
        ['name', (r) => r.name],
        ['n', (r) => r.n],
      ],
      rows,
    )
    expect(table.split('\n')).toEqual(['| name | n |', '| :--- | : |', '| a    | 1 |'])
  })
})
