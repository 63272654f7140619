/**
 * The canonical mailbox: which of our inboxes an email was delivered to, whichever address it
 * was sent to and whichever way it arrived. Cloudflare names the envelope RCPT TO
 * (`Support+Billing@Inbound.example`, an alias), the Gmail poller its GMAIL_MAILBOX; both hand it
 * to the parser (email/parse.ts), which scopes keys and picks the tenant by this one function,
 * so a mail that reaches one inbox both ways is one key, one row and one conversation.
 *
 * - Case: the whole address is lower-cased. RFC 5321 lets the local part be case-sensitive, but
 *   no provider we deliver into treats it so, and one inbox must not split by a sender's spelling.
 * - Sub-address: `local+tag@domain` is `local@domain` (Gmail, Google Workspace, Microsoft 365,
 *   Fastmail, iCloud all deliver it to `local@domain`). Only `+`: `-` and `.` are ordinary
 *   characters of many real addresses (`first-last@`), merging on them would merge inboxes; any
 *   other form an inbox receives is an alias.
 * - Aliases: EMAIL_MAILBOX_ALIASES maps other addresses delivered into an inbox to that inbox
 *   (`{"help@example.com": "support@example.com"}`), after the two rules above, one step.
 * @module
 */

import { present, type StringEnv, setting } from '../shared/settings'
import { normalizeMailbox } from './keys'

/** Alias → mailbox, both canonical (lower-cased, without sub-address). */
export type MailboxAliases = ReadonlyMap<string, string>

export const NO_ALIASES: MailboxAliases = new Map()

export const EMAIL_MAILBOX_ALIASES = setting({
  name: 'EMAIL_MAILBOX_ALIASES',
  kind: 'string',
  secret: false,
  doc: 'JSON {"alias@…": "mailbox@…"}: addresses delivered into one inbox, keyed as that inbox',
})

/**
 * The mailbox an email to `address` belongs to (see the module comment), or null when `address`
 * is not one.
 */
export function canonicalMailbox(
  address: string,
  aliases: MailboxAliases = NO_ALIASES,
): string | null {
  const mailbox = withoutSubaddress(address)
  return mailbox === null ? null : (aliases.get(mailbox) ?? mailbox)
}

/**
 * A mailbox connection's aliases as the parser takes them (contract/connection.ts, channel
 * `email`: its account is the inbox, its ids the inbox's other names; both canonical).
 */
export function connectionAliases(mailbox: {
  account: string
  ids: readonly string[]
}): MailboxAliases {
  return new Map(mailbox.ids.map((alias) => [alias, mailbox.account]))
}

/** Lower-cased bare address without its `+tag`, or null when it is not an address. */
export function withoutSubaddress(address: string): string | null {
  const normalized = normalizeMailbox(address)
  if (normalized === null) return null
  const at = normalized.lastIndexOf('@')
  const plus = normalized.indexOf('+')
  // `+tag@x` (nothing before the `+`) is an address of its own, not a tag of an empty one.
  if (plus <= 0 || plus > at) return normalized
  return `${normalized.slice(0, plus)}${normalized.slice(at)}`
}

/**
 * EMAIL_MAILBOX_ALIASES, read (no aliases when unset). Each problem (not a JSON object, an entry
 * that is not an address, an alias of an alias) goes into `report`, naming the variable and the
 * entry's position, never an address; the whole setting is then ignored, because half a map
 * would scope some aliases one way and some the other.
 */
export function readMailboxAliases(env: StringEnv, report: string[]): MailboxAliases {
  const raw = present(env, EMAIL_MAILBOX_ALIASES.name)
  if (raw === null) return NO_ALIASES
  const problems: string[] = []
  const aliases = parseAliases(raw, problems)
  for (const problem of problems) report.push(`${EMAIL_MAILBOX_ALIASES.name}: ${problem}`)
  return problems.length === 0 ? aliases : NO_ALIASES
}

function parseAliases(raw: string, problems: string[]): Map<string, string> {
  const aliases = new Map<string, string>()
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    parsed = null
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    problems.push('must be a JSON object {"alias@example.com": "mailbox@example.com"}')
    return aliases
  }
  const entries = Object.entries(parsed).map(([from, to]) => ({
    alias: withoutSubaddress(from),
    mailbox: typeof to === 'string' ? withoutSubaddress(to) : null,
  }))
  for (const [index, { alias, mailbox }] of entries.entries()) {
    if (alias === null || mailbox === null) {
      problems.push(`entry ${index + 1} is not an address mapped to an address`)
    } else if (entries.some((entry) => entry.alias === mailbox && entry.mailbox !== mailbox)) {
      problems.push(`entry ${index + 1} maps to an alias, not a mailbox`)
    } else if (alias !== mailbox) {
      aliases.set(alias, mailbox)
    }
  }
  return aliases
}
