/**
 * Strings as the event's fields hold them, in both wings and every channel: control characters
 * dropped, lengths bounded without splitting a character.
 * @module
 */

/** Postgres text cannot hold NUL, and other C0 controls are noise; tab and newline stay. */
export function clean(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
}

/** At most `max` UTF-16 units (what the schema counts), never splitting a surrogate pair. */
export function bounded(text: string, max: number): string {
  if (text.length <= max) return text
  const code = text.charCodeAt(max - 1)
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)
}
