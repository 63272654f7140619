/**
 * Strings Postgres can hold. `text` and `jsonb` refuse two things a JavaScript string (so a
 * vendor's JSON, `"\u0000"`, `"\ud800"`) can carry: NUL, and a lone UTF-16 surrogate (half of a
 * pair, no character at all). Either fails the insert with SQLSTATE class 22, the same way on
 * every retry and replay, so a message carrying one would be refused for good. Instead:
 * - NUL is removed (as message texts always had it: their payload hashes stay what they were);
 * - a lone surrogate becomes U+FFFD, the replacement character (what any UTF-8 encoder, the
 *   driver's included, writes for it).
 * Everything else is kept as it is.
 * @module
 */

/** A lone high surrogate (no low one after it) or a lone low surrogate (no high one before it). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** `text` as Postgres can store it (see the module comment). */
export function storableText(text: string): string {
  const withoutNul = text.includes('\u0000') ? text.replaceAll('\u0000', '') : text
  return withoutNul.replace(LONE_SURROGATE, '\ufffd')
}

/**
 * `value` with every string in it storable, object keys included (jsonb refuses them there too),
 * at any depth; numbers, booleans and null as they are. A new object: the input is not changed.
 */
export function storable<T>(value: T): T {
  return storableValue(value) as T
}

function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value)
  if (Array.isArray(value)) return value.map(storableValue)
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [storableText(key), storableValue(item)]),
    )
  }
  return value
}
