/**
 * The shared corpus of real vendor payloads (shared/corpus/, SOURCES.md there), made sendable the
 * way SOURCES.md says: each use gets fresh ids (so every payload is its own message, and a second
 * use is a new one), is signed with the tests' secrets (local/vendor-deliveries.ts), and emails
 * travel with CRLF line ends and without the mbox `From ` line a storing server adds.
 *
 * Every fresh use knows its `tags`: the fresh ids that end up in the message key of whatever it
 * writes (Slack's team, Telegram's message ids, Twilio's MessageSid, Meta's wamid, the mailbox),
 * so a row or a tombstone can be told apart by payload.
 * @module
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  lineEventId,
  lineRequest,
  META_TEST_SECRET,
  metaRequest,
  nowSeconds,
  randomHex,
  slackRequest,
  TEST_SECRETS,
  telegramRequest,
  twilioRequest,
  waRequest,
} from '../../local/vendor-deliveries'

export type Vendor =
  | 'slack'
  | 'telegram'
  | 'twilio'
  | 'whatsapp-cloud'
  | 'line'
  | 'messenger'
  | 'instagram'
  | 'email'
const VENDORS: readonly Vendor[] = [
  'slack',
  'telegram',
  'twilio',
  'whatsapp-cloud',
  'line',
  'messenger',
  'instagram',
  'email',
]

/**
 * The corpus is kept in the repository (test/corpus/payloads/, a copy of the workplace's
 * shared/corpus/ with its SOURCES.md), so a clone tests it anywhere. CORPUS_DIR points at another
 * copy (a newer shared/corpus/) to run that instead.
 */
export function corpusDir(): string {
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
  const candidates = [process.env.CORPUS_DIR, join(repo, 'test/corpus/payloads')].filter(
    (dir): dir is string => typeof dir === 'string',
  )
  const found = candidates.find((dir) => existsSync(join(dir, 'SOURCES.md')))
  if (!found) throw new Error(`no corpus (SOURCES.md) at ${candidates.join(', ')}`)
  return found
}

/** Every payload file of the corpus, as `vendor/name`. */
export function corpusFiles(dir = corpusDir()): string[] {
  return VENDORS.flatMap((vendor) =>
    readdirSync(join(dir, vendor))
      .sort()
      .map((name) => `${vendor}/${name}`),
  )
}

/** One fresh use of a payload: its requests are the same delivery each time (a replay). */
export interface FreshPayload {
  file: string
  vendor: Vendor
  /** Fresh ids that the message key of anything it writes contains. */
  tags: string[]
  /** For a webhook: the signed request to the Worker at `base`. */
  request?: (base: string) => Promise<Request>
  /** For an email: its bytes and envelope. */
  email?: { raw: Uint8Array; to: string; from: string; viaHandler: boolean }
}

let sequence = 0
/** Unique within the run, and long enough not to be a substring of another fresh id. */
const freshNumber = () => 7_000_000_000 + (Date.now() % 1_000_000_000) + ++sequence * 1_000

export function freshPayload(file: string, dir = corpusDir()): FreshPayload {
  const bytes = readFileSync(join(dir, file))
  const vendor = file.split('/')[0] as Vendor
  switch (vendor) {
    case 'slack':
      return freshSlack(file, JSON.parse(bytes.toString('utf8')))
    case 'telegram':
      return freshTelegram(file, JSON.parse(bytes.toString('utf8')))
    case 'twilio':
      return freshTwilio(file, bytes.toString('utf8').trim())
    case 'whatsapp-cloud':
      return freshWhatsApp(file, JSON.parse(bytes.toString('utf8')))
    case 'line':
      return freshLine(file, JSON.parse(bytes.toString('utf8')))
    case 'messenger':
    case 'instagram':
      return freshMeta(file, vendor, JSON.parse(bytes.toString('utf8')))
    case 'email':
      return freshEmail(file, bytes)
  }
}

type Json = Record<string, unknown>

/** A fresh team (every message key starts with it) and a fresh event_id where there is one. */
function freshSlack(file: string, body: Json): FreshPayload {
  const team = `T${randomHex(6).toUpperCase()}`
  const fresh: Json = { ...body }
  if ('team_id' in body) fresh.team_id = team
  if (typeof body.event_id === 'string') fresh.event_id = `Ev${randomHex(6).toUpperCase()}`
  return {
    file,
    vendor: 'slack',
    tags: [team],
    request: (base) => slackRequest(`${base}/webhooks/slack`, fresh),
  }
}

/**
 * A fresh update_id, fresh message ids (the same old id, the same new one: replies agree) and
 * dates of now (some SDK fixtures say 0).
 */
function freshTelegram(file: string, parsed: Json): FreshPayload {
  const update = file.includes('/msg-') ? { update_id: 0, message: parsed } : parsed
  const ids = new Map<number, number>()
  const renumbered = mapJson(update, (key, value) => {
    if (typeof value !== 'number') return value
    if (key === 'date') return nowSeconds()
    if (key !== 'message_id') return value
    return ids.get(value) ?? ids.set(value, freshNumber()).get(value)
  }) as Json
  renumbered.update_id = freshNumber()
  // A button press is keyed by its callback query's id.
  const query = renumbered.callback_query as Json | undefined
  if (query) {
    query.id = String(freshNumber())
    ids.set(-1, Number(query.id))
  }
  const body = JSON.stringify(renumbered)
  return {
    file,
    vendor: 'telegram',
    tags: [...ids.values()].map(String),
    request: async (base) =>
      telegramRequest(`${base}/webhooks/telegram/${TEST_SECRETS.telegramBotId}`, body),
  }
}

/** Fresh message SIDs (SM…/MM…), in the published parameter order. */
function freshTwilio(file: string, form: string): FreshPayload {
  const sids = new Map<string, string>()
  const params = [...new URLSearchParams(form)].map(([name, value]): [string, string] => {
    if (!/Sid$/.test(name) || !/^(SM|MM)/.test(value)) return [name, value]
    const sid = sids.get(value) ?? `${value.slice(0, 2)}${randomHex(16)}`
    sids.set(value, sid)
    return [name, sid]
  })
  return {
    file,
    vendor: 'twilio',
    tags: [...sids.values()],
    request: (base) => twilioRequest(`${base}/webhooks/twilio`, params),
  }
}

/** Fresh wamids (every `wamid.…` string: a reply's context and a reaction's target agree). */
function freshWhatsApp(file: string, body: Json): FreshPayload {
  const wamids = new Map<string, string>()
  const fresh = mapJson(body, (_key, value) => {
    if (typeof value !== 'string' || !value.startsWith('wamid.')) return value
    const wamid = wamids.get(value) ?? `wamid.${randomHex(12)}`
    wamids.set(value, wamid)
    return wamid
  })
  const text = JSON.stringify(fresh)
  return {
    file,
    vendor: 'whatsapp-cloud',
    tags: [...wamids.values()],
    request: (base) => waRequest(`${base}/webhooks/whatsapp-cloud`, text),
  }
}

/**
 * Fresh event ids (`webhookEventId`: a postback's key) and message ids (a message's, the one an
 * unsend or an edit names: the same old id, the same new one); the bot (`destination`) as it is.
 */
function freshLine(file: string, body: Json): FreshPayload {
  const ids = new Map<string, string>()
  const renew = (value: string, make: () => string) =>
    ids.get(value) ?? ids.set(value, make()).get(value) ?? value
  const fresh = mapJson(body, (key, value) => {
    if (typeof value !== 'string') return value
    if (key === 'webhookEventId') return renew(value, lineEventId)
    if (key === 'id' || key === 'messageId') return renew(`m${value}`, () => String(freshNumber()))
    return value
  })
  const text = JSON.stringify(fresh)
  return {
    file,
    vendor: 'line',
    tags: [...ids.values()],
    request: (base) => lineRequest(`${base}/webhooks/line`, text),
  }
}

/**
 * Fresh message ids in the form Meta printed them (`mid.…:…`, `m_…`, `mid.$…`: a suffix added),
 * and fresh senders (a postback without a `mid` is keyed by its sender and time).
 */
function freshMeta(file: string, vendor: 'messenger' | 'instagram', body: Json): FreshPayload {
  const ids = new Map<string, string>()
  const renew = (value: string, make: () => string) =>
    ids.get(value) ?? ids.set(value, make()).get(value) ?? value
  const mid = (value: unknown) =>
    typeof value === 'string' ? renew(value, () => `${value}${randomHex(6)}`) : value
  const fresh = mapJson(body, (key, value) => {
    if (key === 'mid') return mid(value)
    if (key === 'mids' && Array.isArray(value)) return value.map(mid)
    if (key === 'sender') {
      const sender = value as Json
      const id = typeof sender.id === 'string' ? sender.id : null
      return id ? { ...sender, id: renew(`s${id}`, () => String(freshNumber())) } : sender
    }
    return value
  })
  const text = JSON.stringify(fresh)
  return {
    file,
    vendor,
    tags: [...ids.values()],
    request: (base) => metaRequest(`${base}/webhooks/${vendor}`, text, META_TEST_SECRET),
  }
}

/**
 * A fresh envelope recipient (the mailbox starts every email key). Miniflare's own email endpoint
 * refuses a mail without Message-ID or From before the Worker runs: those go to the handler
 * directly (test/email/support/worker.ts).
 */
function freshEmail(file: string, bytes: Buffer): FreshPayload {
  const mailbox = `corpus-${randomHex(6)}@inbound.example`
  const raw = crlf(withoutMboxLine(bytes))
  const head = raw.toString('latin1').split('\r\n\r\n')[0] ?? ''
  const has = (name: string) => new RegExp(`^${name}:`, 'im').test(head)
  return {
    file,
    vendor: 'email',
    tags: [mailbox],
    email: {
      raw: new Uint8Array(raw),
      to: mailbox,
      from: /^From:.*?([^\s<>"]+@[^\s<>"]+)/im.exec(head)?.[1] ?? 'sender@corpus.example',
      viaHandler: has('Message-ID') && has('From'),
    },
  }
}

/** The `From sender date` line a storing mail server writes; never part of SMTP DATA. */
function withoutMboxLine(bytes: Buffer): Buffer {
  if (bytes.subarray(0, 5).toString('latin1') !== 'From ') return bytes
  return bytes.subarray(bytes.indexOf(0x0a) + 1)
}

/** Every bare LF as CRLF, bytes untouched otherwise (8-bit parts stay in their charset). */
function crlf(bytes: Buffer): Buffer {
  const out: number[] = []
  bytes.forEach((byte, i) => {
    if (byte === 0x0a && bytes[i - 1] !== 0x0d) out.push(0x0d)
    out.push(byte)
  })
  return Buffer.from(out)
}

/** A copy of `value` with every property value passed through `map` (objects and arrays walked). */
function mapJson(value: unknown, map: (key: string, value: unknown) => unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => mapJson(item, map))
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, map(key, mapJson(item, map))]),
  )
}
