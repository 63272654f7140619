/**
 * A Markdown table whose columns are padded so it also reads as plain text: the first column
 * left-aligned, the others right-aligned (numbers). The fault matrix's and the soak's tables.
 * @module
 */

/** A column: its title and how a row shows in it. */
export type Column<T> = readonly [title: string, cell: (row: T) => string | number]

export function markdownTable<T>(columns: readonly Column<T>[], rows: readonly T[]): string {
  const cells = [
    columns.map(([title]) => title),
    ...rows.map((r) => columns.map(([, f]) => String(f(r)))),
  ]
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)))
  const line = (row: string[]) =>
    `| ${row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join(' | ')} |`
  const rule = `| ${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w - 1)}` : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`
  const [head = [], ...body] = cells
  return [line(head), rule, ...body.map(line)].join('\n')
}
