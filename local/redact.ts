/**
 * Connection strings for messages: the password (if any) replaced, so a URL can be shown without
 * leaking the credential it carries.
 * @module
 */

/** @example redact('postgres://u:pw@h/db') // 'postgres://u:***@h/db' */
export function redact(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return '(unparseable url)'
  }
}
