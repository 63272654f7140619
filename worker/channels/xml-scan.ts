/**
 * Linear scans of untrusted XML, for what is read of a WeChat body without parsing it: the
 * `<Encrypt>` element its `msg_signature` covers (read before that signature is checked, so no
 * parser may run yet), and whether it declares a DOCTYPE or ENTITY outside CDATA. Each scan moves
 * forward only: every `indexOf` starts past where the last one ended, and an unclosed
 * `<![CDATA[` ends the scan (the rest is CDATA, which no parser takes either), so the work is
 * linear in the text whatever it holds. A regex that skips CDATA sections
 * (`<!\[CDATA\[[\s\S]*?\]\]>`) is not: on an unclosed one it tries every later `<![CDATA[` to the
 * end again, quadratic (250 KiB took two seconds of CPU).
 * @module
 */

const CDATA_OPEN = '<![CDATA['
const CDATA_CLOSE = ']]>'

/**
 * Each `<` outside CDATA sections, in order, until `visit` answers true (stop). Returns without a
 * visit past an unclosed CDATA section.
 */
function eachMarkup(text: string, visit: (at: number) => boolean): void {
  let at = text.indexOf('<')
  while (at >= 0) {
    if (text.startsWith(CDATA_OPEN, at)) {
      const close = text.indexOf(CDATA_CLOSE, at + CDATA_OPEN.length)
      if (close < 0) return
      at = text.indexOf('<', close + CDATA_CLOSE.length)
    } else if (visit(at)) {
      return
    } else {
      at = text.indexOf('<', at + 1)
    }
  }
}

const DECLARATIONS = ['<!DOCTYPE', '<!ENTITY']

/** Whether the text declares a DOCTYPE or an ENTITY (any case) outside CDATA. */
export function declaresDoctype(text: string): boolean {
  let found = false
  eachMarkup(text, (at) => {
    const head = text.slice(at, at + 9).toUpperCase()
    found = DECLARATIONS.some((declaration) => head.startsWith(declaration))
    return found
  })
  return found
}

/**
 * The text of the first `<{name}>` element outside CDATA, its own CDATA unwrapped (or its plain
 * text, trimmed); null when there is none or it is not closed right after its text. Entities are
 * not expanded: what this reads (base64) has none.
 */
export function firstElementText(text: string, name: string): string | null {
  const open = `<${name}>`
  const close = `</${name}>`
  let value: string | null = null
  eachMarkup(text, (at) => {
    if (!text.startsWith(open, at)) return false
    const start = at + open.length
    let end: number
    if (text.startsWith(CDATA_OPEN, start)) {
      end = text.indexOf(CDATA_CLOSE, start + CDATA_OPEN.length)
      if (end >= 0 && text.startsWith(close, end + CDATA_CLOSE.length)) {
        value = text.slice(start + CDATA_OPEN.length, end)
      }
    } else {
      end = text.indexOf('<', start)
      if (end >= 0 && text.startsWith(close, end)) value = text.slice(start, end).trim()
    }
    return true
  })
  return value
}
