/**
 * Counts the statements a Postgres client sends, from its side of the wire protocol (the Neon
 * proxy feeds it each connection's bytes): a simple Query's statements (split at `;`), and each
 * Execute of the extended protocol, under a short label of its SQL (`SELECT ingest_message`,
 * `INSERT gateway_decisions`, `BEGIN`). What the bench reports as Postgres statements per event;
 * counted where the origin's driver meets the database, so nothing in the origin changes for it.
 *
 * Frame by frame: the untyped startup messages first (an SSL or GSS request keeps the next one
 * untyped), then `type, int32 length, body`. Only Query, Parse, Bind and Execute are read; the
 * bodies of the others (a Bind's parameters are the large part) are skipped as they stream by.
 * @module
 */

const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
/** The message types whose bodies name or run a statement. */
const READ = new Set(['Q', 'P', 'B', 'E'])
const EMPTY = Buffer.alloc(0)

/** `SELECT ... FROM ingest_message(...)` → `SELECT ingest_message`; `BEGIN` → `BEGIN`. */
export function statementLabel(sql: string): string {
  const keyword = (/^\s*(\w+)/.exec(sql)?.[1] ?? '?').toUpperCase()
  const target = /\b(?:FROM|INTO|UPDATE)\s+([\w.]+)/i.exec(sql)?.[1]
  return target && keyword !== 'SET' ? `${keyword} ${target}` : keyword
}

/** One connection's reader; every connection of a proxy adds to the same `counts`. */
export class WireTally {
  private typed = false
  /** An incomplete header, or an incomplete body that is read. */
  private pending: Buffer = EMPTY
  /** Body bytes still to pass over unread. */
  private skip = 0
  /** Prepared statement name → label; portal name → label (unnamed: ''). */
  private readonly statements = new Map<string, string>()
  private readonly portals = new Map<string, string>()

  constructor(private readonly counts: Map<string, number>) {}

  push(chunk: Buffer): void {
    let data = chunk
    if (this.skip > 0) {
      const passed = Math.min(this.skip, data.length)
      this.skip -= passed
      data = data.subarray(passed)
    }
    if (this.pending.length > 0) {
      data = Buffer.concat([this.pending, data])
      this.pending = EMPTY
    }
    let at = 0
    while (at < data.length) {
      const header = this.typed ? 5 : 4
      if (data.length - at < header) break
      const type = this.typed ? String.fromCharCode(data[at] as number) : ''
      const total = (this.typed ? 1 : 0) + data.readInt32BE(this.typed ? at + 1 : at)
      if (total < header) throw new Error('malformed frontend message')
      const available = data.length - at
      if (this.typed && !READ.has(type)) {
        if (available >= total) {
          at += total
          continue
        }
        this.skip = total - available
        at = data.length
        break
      }
      if (available < total) break
      this.message(type, data.subarray(at + header, at + total))
      at += total
    }
    if (at < data.length) this.pending = Buffer.from(data.subarray(at))
  }

  private message(type: string, body: Buffer): void {
    switch (type) {
      case '': {
        const code = body.length >= 4 ? body.readInt32BE(0) : 0
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) this.typed = true
        return
      }
      case 'Q': {
        for (const sql of cString(body, 0).text.split(';')) {
          if (sql.trim()) this.count(statementLabel(sql))
        }
        return
      }
      case 'P': {
        const name = cString(body, 0)
        this.statements.set(name.text, statementLabel(cString(body, name.end).text))
        return
      }
      case 'B': {
        const portal = cString(body, 0)
        const statement = cString(body, portal.end).text
        this.portals.set(portal.text, this.statements.get(statement) ?? '?')
        return
      }
      case 'E':
        this.count(this.portals.get(cString(body, 0).text) ?? '?')
    }
  }

  private count(label: string): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + 1)
  }
}

/** The NUL-terminated string at `from`, and the offset after its NUL. */
function cString(body: Buffer, from: number): { text: string; end: number } {
  const nul = body.indexOf(0, from)
  const end = nul === -1 ? body.length : nul
  return { text: body.toString('utf8', from, end), end: end + 1 }
}
