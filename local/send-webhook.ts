/**
 * Builds a real, signed vendor webhook and sends it to the gateway (or prints it as curl), so every
 * route can be tried by hand against `npm run dev`:
 *
 *   tsx local/send-webhook.ts slack    [--text hi] [--id Ev123] [--times 8]
 *   tsx local/send-webhook.ts twilio   [--text hi] [--id SM...] [--sms] [--status delivered]
 *   tsx local/send-webhook.ts telegram [--text hi] [--id 1001] [--chat 7] [--message-id 42] [--edit]
 *   tsx local/send-webhook.ts whatsapp-cloud [--text hi] [--id wamid...] [--phone-number-id ID]
 *   tsx local/send-webhook.ts line     [--text hi] [--id ULID] [--message-id 5...] [--unsend]
 *   tsx local/send-webhook.ts messenger|instagram [--text hi] [--id m_...] [--account ID] [--edit]
 *   tsx local/send-webhook.ts wechat   [--text hi] [--id MsgId] (encrypted when the account has an AES key)
 *   tsx local/send-webhook.ts teams    [--text hi] [--id 1700000000123] [--edit | --delete]
 *   tsx local/send-webhook.ts email    [--file local/samples/hello.eml | --text hi --id <msg id>] [--from A] [--to B]
 *   ... [--url http://127.0.0.1:8787] [--curl] [--tenant ID]
 *
 * `--id` reuses a delivery id (a vendor replay); without it every run is a new delivery. Each
 * answer says what the gateway made of it (its `x-dedup-decision` header): new, duplicate, ... Secrets
 * come from the environment, else `.dev.vars`, else `.dev.vars.example` (what `npm run dev` uses).
 * With a per-tenant variable set (SLACK_SIGNING_SECRETS_BY_APP, ...), the request is signed as the
 * tenant `--tenant` names (Slack app id, AccountSid, Telegram bot id, LINE bot user id, WeChat
 * gh_ id, Teams bot app id), else as its first tenant.
 * Slack signatures expire after 5 minutes: a printed curl must be run within that.
 *
 * Teams: the token is signed with the fixed development key (TEAMS_DEV_KEY), for the bot
 * `--tenant` or the first of TEAMS_APP_IDS; while it sends, this serves that key's OpenID metadata
 * and JWKS at TEAMS_OPENID_METADATA_URL when that is a local http URL (the Worker fetches and
 * caches them for a day). Tokens expire after an hour.
 * @module
 */
import { parseArgs } from 'node:util'
import { DECISION_HEADER } from '../contract/decision-log'
import { loadDevVars } from './dev-vars'
import { buildEmail, describeEmailAnswer } from './email-delivery'
import { BUILDERS, VENDORS, type Vendor } from './webhook-builders'
import { type Built, type Options, SECRET_NAMES } from './webhook-signing'

/** The webhook vendors, and email through the local Email Routing endpoint. */
const KINDS = [...VENDORS, 'email'] as const
type Kind = (typeof KINDS)[number]

const USAGE = `usage: tsx local/send-webhook.ts ${KINDS.join('|')} [options]
  --url URL          gateway base URL (default $WORKER_URL or http://127.0.0.1:8787)
  --text TEXT        message text
  --id ID            reuse a delivery id: Slack event_id, Twilio MessageSid, Telegram update_id,
                     WhatsApp message id (wamid), LINE webhookEventId, Messenger / Instagram mid,
                     WeChat MsgId, Teams activity id, email Message-ID
  --times N          send the same delivery N times (default 1)
  --curl             print a curl command instead of sending
  --tenant ID        sign as this Slack app / Twilio account / Telegram bot / Meta app / LINE bot /
                     WeChat account (gh_ id) / Teams bot (per-tenant secrets)
  slack:    --channel C123 --user U123 --ts 1700000000.000100
  twilio:   --sms (an SMS instead of WhatsApp) --from +14155550100 --status delivered
  telegram: --chat 7 --message-id 42 --edit
  whatsapp-cloud: --phone-number-id 106540352242922
  line:     --message-id 5... (the message; reuse it for a redelivery under a new --id)
            --unsend (take that message back)
  messenger, instagram: --account ID (the Page / Instagram account) --edit (edit the --id message)
  teams:    --edit (a messageUpdate of --id) --delete (a messageDelete of --id)
  email:    --file local/samples/hello.eml (a raw message as it is; checked for its Message-ID
            and From first) --from ada@customer.example --to support@inbound.example
            (the envelope; default: the message's From and To)`

/** What the gateway made of a delivery, in words: its x-dedup-decision header. */
function describeDecision(header: string | null): string {
  if (!header) return 'no decision (refused before one was made)'
  const words: Record<string, string> = { forwarded: 'new', duplicate: 'duplicate' }
  return header
    .split(',')
    .map((decision) => words[decision] ?? decision)
    .join(', ')
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

function toCurl(built: Built): string {
  const headers = Object.entries(built.headers).map(([k, v]) => `-H ${shellQuote(`${k}: ${v}`)}`)
  return [
    'curl -sS -i -X POST',
    shellQuote(built.url),
    ...headers,
    `--data-raw ${shellQuote(built.body)}`,
  ].join(' \\\n  ')
}

function isKind(name: string | undefined): name is Kind {
  return (KINDS as readonly string[]).includes(name ?? '')
}

function build(kind: Kind, base: string, vars: Record<string, string>, o: Options) {
  return kind === 'email' ? buildEmail(base, o) : BUILDERS[kind as Vendor](base, vars, o)
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      text: { type: 'string' },
      id: { type: 'string' },
      times: { type: 'string' },
      curl: { type: 'boolean' },
      channel: { type: 'string' },
      user: { type: 'string' },
      ts: { type: 'string' },
      sms: { type: 'boolean' },
      from: { type: 'string' },
      status: { type: 'string' },
      chat: { type: 'string' },
      'message-id': { type: 'string' },
      edit: { type: 'boolean' },
      unsend: { type: 'boolean' },
      delete: { type: 'boolean' },
      'phone-number-id': { type: 'string' },
      account: { type: 'string' },
      tenant: { type: 'string' },
      file: { type: 'string' },
      to: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  const kind = positionals[0]
  if (values.help || !isKind(kind)) {
    console.log(USAGE)
    process.exitCode = values.help ? 0 : 2
    return
  }
  // npm run dev warns about .dev.vars.example's values when it starts; every send need not.
  const vars = loadDevVars({
    root: process.cwd(),
    alsoFromEnvironment: SECRET_NAMES,
    warn: () => {},
  }).values
  const base = (values.url ?? process.env.WORKER_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '')
  const request = await build(kind, base, vars, values)

  if (values.curl) {
    console.log(toCurl(request))
    return
  }
  const times = Math.max(1, Number(values.times ?? 1))
  const stop = await request.serve?.()
  try {
    await sendTimes(kind, request, times)
  } finally {
    await stop?.()
  }
}

async function sendTimes(kind: Kind, request: Built, times: number): Promise<void> {
  for (let i = 1; i <= times; i++) {
    const response = await fetch(request.url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
    })
    const text = (await response.text()).slice(0, 200)
    const decision =
      kind === 'email'
        ? describeEmailAnswer(response.status)
        : describeDecision(response.headers.get(DECISION_HEADER))
    console.log(`${i}/${times} ${kind} -> ${response.status} ${decision} ${text}`)
  }
}

main().catch((err: Error) => {
  console.error(err.message)
  process.exitCode = 1
})
