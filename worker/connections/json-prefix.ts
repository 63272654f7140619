/**
 * One string value at a fixed path of a JSON body, read from a bounded prefix before
 * verification: a single linear pass over at most {@link HINT_SCAN_CHARS} characters that tracks
 * only the path it is at (no tree is built), so a 3 MB Meta batch costs the same as a small one
 * before its HMAC. The vendors put the id it looks for first (LINE's `destination`, Meta's first
 * `entry[].id`, the first change's `metadata`); not within the prefix: no hint (the variables or
 * the retry answer, as for a body that names none). It only picks which secrets to try.
 * @module
 */

/** How much of a body the hint is looked for in. */
export const HINT_SCAN_CHARS = 8 * 1024

type Step = string | number
interface Frame {
  array: boolean
  /** The key (in an object) or index (in an array) the scan is at. */
  at: Step | null
  expectKey: boolean
}

/** The string at `path` (keys and array indexes) in the prefix of `text`, or null. */
export function stringAt(text: string, path: readonly Step[]): string | null {
  const end = Math.min(text.length, HINT_SCAN_CHARS)
  const stack: Frame[] = []
  let i = 0
  while (i < end) {
    const ch = text[i] as string
    const top = stack[stack.length - 1]
    if (ch === '{' || ch === '[') {
      stack.push({ array: ch === '[', at: ch === '[' ? 0 : null, expectKey: ch === '{' })
    } else if (ch === '}' || ch === ']') {
      stack.pop()
    } else if (ch === ':' && top) {
      top.expectKey = false
    } else if (ch === ',' && top) {
      if (top.array) top.at = (top.at as number) + 1
      else top.expectKey = true
    } else if (ch === '"') {
      const close = stringEnd(text, i + 1, end)
      if (close < 0) return null
      const raw = text.slice(i + 1, close)
      if (top && !top.array && top.expectKey) top.at = raw
      else if (atPath(stack, path)) return raw
      i = close
    }
    i += 1
  }
  return null
}

/** The index of the quote closing a string that starts at `from`, or -1 past `end`. */
function stringEnd(text: string, from: number, end: number): number {
  for (let j = from; j < end; j++) {
    const ch = text[j]
    if (ch === '\\') j += 1
    else if (ch === '"') return j
  }
  return -1
}

function atPath(stack: readonly Frame[], path: readonly Step[]): boolean {
  if (stack.length !== path.length) return false
  return stack.every((frame, depth) => frame.at === path[depth])
}
