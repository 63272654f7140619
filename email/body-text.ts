/**
 * The text of an email as the event carries it: the body as plain text (HTML rendered when there
 * is no text part), control characters dropped (shared/text.ts).
 * @module
 */
import { clean } from '../shared/text'

/** The text part, else the HTML part as text; line ends unified, trailing space dropped. */
export function bodyText(email: { text?: string | undefined; html?: string | undefined }): string {
  const text = email.text ?? (email.html ? htmlToText(email.html) : '')
  return clean(text.replace(/\r\n?/g, '\n')).trimEnd()
}

/**
 * Enough HTML-to-text for a conversation view (postal-mime renders text only when a text part
 * exists): drop scripts, styles and comments, break lines at block ends, drop tags, decode the
 * common entities.
 */
export function htmlToText(html: string): string {
  return decodeEntities(
    html
      .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, '')
      .replace(/<!--[\s\S]*?-->/g, '')
      .replace(/<br\s*\/?>/gi, '\n')
      .replace(/<\/(p|div|li|tr|h[1-6]|blockquote|pre|table)\s*>/gi, '\n')
      .replace(/<[^>]*>/g, ''),
  )
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,6});/gi, (entity, name: string) => {
    if (name[0] !== '#') return NAMED_ENTITIES[name.toLowerCase()] ?? entity
    const code =
      name[1] === 'x' || name[1] === 'X'
        ? Number.parseInt(name.slice(2), 16)
        : Number(name.slice(1))
    // Surrogate code points are not characters: decoding one would leave a lone surrogate that
    // JSON inflates to six bytes. Leave such an entity as written.
    const surrogate = code >= 0xd800 && code <= 0xdfff
    return code > 0 && code <= 0x10ffff && !surrogate ? String.fromCodePoint(code) : entity
  })
}
