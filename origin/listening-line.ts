/**
 * The readiness line of `npm run origin`: one JSON line on stdout, `{"msg":"origin listening",
 * "url":"http://127.0.0.1:8788"}`, printed once the server accepts requests. Whatever starts an
 * origin process (the dev stack, tests, the bench) waits for it; both sides use these two functions.
 * @module
 */

export const LISTENING_MSG = 'origin listening'

export function formatListeningLine(url: string): string {
  return JSON.stringify({ msg: LISTENING_MSG, url })
}

/** The origin's URL if `line` is the readiness line, else undefined (any other output). */
export function parseListeningLine(line: string): string | undefined {
  if (!line.includes(LISTENING_MSG)) return undefined
  try {
    const parsed = JSON.parse(line) as { msg?: unknown; url?: unknown }
    return parsed.msg === LISTENING_MSG && typeof parsed.url === 'string' ? parsed.url : undefined
  } catch {
    return undefined
  }
}
