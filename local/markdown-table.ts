/**
 * A Markdown table whose columns are padded so it also reads as plain text: by default the first
 * column left-aligned, the others right-aligned (numbers), as the fault matrix's and the soak's
 * tables want; a column may say its own alignment (`npm run dev:sql`: text left, numbers right).
 * @module
 */

export type Align = 'left' | 'right'

/** A column: its title, how a row shows in it, and optionally its alignment. */
export type Column<T> = readonly [title: string, cell: (row: T) => string | number, align?: Align]

export function markdownTable<T>(columns: readonly Column<T>[], rows: readonly T[]): string {
  const cells = [
    columns.map(([title]) => title),
    ...rows.map((r) => columns.map(([, f]) => String(f(r)))),
  ]
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)))
  const aligns = columns.map(([, , align], i): Align => align ?? (i === 0 ? 'left' : 'right'))
  const pad = (cell: string, i: number) =>
    aligns[i] === 'left' ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)
  const line = (row: string[]) => `| ${row.map(pad).join(' | ')} |`
  const rule = `| ${widths.map((w, i) => (aligns[i] === 'left' ? `:${'-'.repeat(w - 1)}` : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`
  const [head = [], ...body] = cells
  return [line(head), rule, ...body.map(line)].join('\n')
}
