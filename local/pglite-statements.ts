/**
 * Named prepared statements on PGlite's one backend, shared by every wire connection
 * (local/pglite-wire.ts): on Postgres each connection is a session with statement names of its
 * own; here two connections preparing `ingest_message_v1` would meet ("prepared statement already
 * exists", 42P05), and one could run the other's. So each connection's statement names get a
 * prefix of its own: its slot (the smallest number no open connection holds), reused after it
 * closes. A reused slot may still hold a closed connection's statements, so every Parse of a
 * named statement is preceded by a Close of that name (not an error when there is none), its
 * answer kept from the client. The unnamed statement ("") is left alone: it lives only until the
 * next Parse, and the floor keeps one connection's batch together.
 * @module
 */

/** A wire message with its statement name (if it carries one) given the connection's prefix. */
export function scopeStatementName(type: string, message: Buffer, prefix: string): Buffer {
  switch (type) {
    case 'P': // Parse: name, query, ...
      return rewriteString(message, 5, prefix)
    case 'B': // Bind: portal, statement, ...
      return rewriteString(message, stringEnd(message, 5) + 1, prefix)
    case 'D': // Describe and Close: 'S' (statement) or 'P' (portal), name
    case 'C':
      return message[5] === 0x53 ? rewriteString(message, 6, prefix) : message
    default:
      return message
  }
}

/** For a Parse of a named statement: the Close of that (already prefixed) name, else null. */
export function closeBeforeParse(type: string, message: Buffer): Buffer | null {
  if (type !== 'P') return null
  const end = stringEnd(message, 5)
  if (end === 5) return null
  const name = message.subarray(5, end + 1)
  const close = Buffer.alloc(1 + 4 + 1 + name.length)
  close.write('C', 0, 'latin1')
  close.writeInt32BE(close.length - 1, 1)
  close.write('S', 5, 'latin1')
  name.copy(close, 6)
  return close
}

function stringEnd(message: Buffer, from: number): number {
  const end = message.indexOf(0, from)
  if (end < 0) throw new Error('malformed message: unterminated string')
  return end
}

/** The string at `at` prefixed (empty strings stay empty), the length field recomputed. */
function rewriteString(message: Buffer, at: number, prefix: string): Buffer {
  if (message[at] === 0) return message
  const head = Buffer.from(prefix, 'utf8')
  const out = Buffer.concat([message.subarray(0, at), head, message.subarray(at)])
  out.writeInt32BE(out.length - 1, 1)
  return out
}

/** Slots for statement prefixes: the smallest free number, given back when a connection closes. */
export class StatementSlots {
  private readonly taken = new Set<number>()

  take(): number {
    let slot = 0
    while (this.taken.has(slot)) slot++
    this.taken.add(slot)
    return slot
  }

  give(slot: number): void {
    this.taken.delete(slot)
  }
}
