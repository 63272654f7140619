/**
 * Builds a real, signed vendor webhook and sends it to the gateway (or prints it as curl), so every
 * route can be tried by hand against `npm run dev`:
 *
 *   tsx local/send-webhook.ts slack    [--text hi] [--id Ev123] [--times 8]
 *   tsx local/send-webhook.ts twilio   [--text hi] [--id SM...] [--sms] [--status delivered]
 *   tsx local/send-webhook.ts telegram [--text hi] [--id 1001] [--chat 7] [--message-id 42] [--edit]
 *   ... [--url http://127.0.0.1:8787] [--curl] [--tenant ID]
 *
 * `--id` reuses a delivery id (a vendor replay); without it every run is a new delivery. Secrets
 * come from the environment, else `.dev.vars`, else `.dev.vars.example` (what `npm run dev` uses).
 * With a per-tenant variable set (SLACK_SIGNING_SECRETS_BY_APP, ...), the request is signed as the
 * tenant `--tenant` names (Slack app id, AccountSid, Telegram bot id), else as its first tenant.
 * Slack signatures expire after 5 minutes: a printed curl must be run within that.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { slackSignature } from '../worker/channels/slack'
import { TELEGRAM_SECRET_HEADER } from '../worker/channels/telegram'
import { twilioSignature } from '../worker/channels/twilio'
import { parseTenantSecrets } from '../worker/tenants'
import { loadDevVars } from './dev-vars'

const USAGE = `usage: tsx local/send-webhook.ts slack|twilio|telegram [options]
  --url URL          gateway base URL (default $WORKER_URL or http://127.0.0.1:8787)
  --text TEXT        message text
  --id ID            reuse a delivery id: Slack event_id, Twilio MessageSid, Telegram update_id
  --times N          send the same delivery N times (default 1)
  --curl             print a curl command instead of sending
  --tenant ID        sign as this Slack app / Twilio account / Telegram bot (per-tenant secrets)
  slack:    --channel C123 --user U123 --ts 1700000000.000100
  twilio:   --sms (an SMS instead of WhatsApp) --from +14155550100 --status delivered
  telegram: --chat 7 --message-id 42 --edit`

const hex = (bytes: number) => randomBytes(bytes).toString('hex')

interface Built {
  url: string
  headers: Record<string, string>
  body: string
}

type Options = Record<string, string | boolean | undefined>

const SECRET_NAMES = [
  'SLACK_SIGNING_SECRET',
  'TWILIO_AUTH_TOKEN',
  'TELEGRAM_SECRET_TOKEN',
  'TELEGRAM_BOT_ID',
  'SLACK_SIGNING_SECRETS_BY_APP',
  'TWILIO_AUTH_TOKENS_BY_ACCOUNT',
  'TELEGRAM_SECRET_TOKENS_BY_BOT',
  'PUBLIC_BASE_URL',
] as const

/** The first entry of a rotation list: the one vendors sign with today. */
function firstSecret(vars: Record<string, string>, name: string): string {
  const value = vars[name]?.split(',')[0]?.trim()
  if (!value) throw new Error(`${name} is not set (environment, .dev.vars or .dev.vars.example)`)
  return value
}

/**
 * Who signs, and with what: the tenant's first secret from the per-tenant variable when it is set
 * (the `--tenant` one, else its first tenant), else the single-tenant variable (tenant undefined).
 */
function signer(
  vars: Record<string, string>,
  perTenant: string,
  shared: string,
  tenant: string | undefined,
): { tenant: string | undefined; secret: string } {
  const warnings: string[] = []
  const byTenant = parseTenantSecrets(
    perTenant,
    vars[perTenant],
    { test: () => true, hint: '' },
    warnings,
  )
  for (const warning of warnings) console.error(warning)
  if (byTenant === null || byTenant.size === 0) return { tenant, secret: firstSecret(vars, shared) }
  const chosen = tenant ?? [...byTenant.keys()][0]
  const secret = chosen === undefined ? undefined : byTenant.get(chosen)?.[0]
  if (chosen === undefined || secret === undefined) {
    throw new Error(`${perTenant} has no entry for tenant ${chosen}`)
  }
  return { tenant: chosen, secret }
}

const tenantOption = (o: Options) => (typeof o.tenant === 'string' ? o.tenant : undefined)

async function buildSlack(base: string, vars: Record<string, string>, o: Options): Promise<Built> {
  const micros = String(Math.floor(Math.random() * 1e6)).padStart(6, '0')
  const ts = String(o.ts ?? `${Math.floor(Date.now() / 1000)}.${micros}`)
  const { tenant, secret } = signer(
    vars,
    'SLACK_SIGNING_SECRETS_BY_APP',
    'SLACK_SIGNING_SECRET',
    tenantOption(o),
  )
  const payload = {
    token: 'send-webhook',
    team_id: 'T0LOCAL',
    api_app_id: tenant ?? 'A0LOCAL',
    type: 'event_callback',
    event_id: String(o.id ?? `Ev${hex(6).toUpperCase()}`),
    event_time: Math.floor(Date.now() / 1000),
    event: {
      type: 'message',
      channel: String(o.channel ?? 'C0LOCAL'),
      user: String(o.user ?? 'U0LOCAL'),
      text: String(o.text ?? 'hello from send-webhook'),
      ts,
      event_ts: ts,
      channel_type: 'channel',
    },
  }
  const body = JSON.stringify(payload)
  const timestamp = String(Math.floor(Date.now() / 1000))
  return {
    url: `${base}/webhooks/slack`,
    headers: {
      'content-type': 'application/json',
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': await slackSignature(secret, timestamp, body),
    },
    body,
  }
}

async function buildTwilio(base: string, vars: Record<string, string>, o: Options): Promise<Built> {
  const sid = String(o.id ?? `SM${hex(16)}`)
  const from = String(o.from ?? (o.sms ? '+14155550100' : 'whatsapp:+14155550100'))
  const { tenant, secret } = signer(
    vars,
    'TWILIO_AUTH_TOKENS_BY_ACCOUNT',
    'TWILIO_AUTH_TOKEN',
    tenantOption(o),
  )
  const params: Array<[string, string]> = [
    ['MessageSid', sid],
    ['SmsSid', sid],
    ['AccountSid', tenant ?? 'AC00000000000000000000000000000000'],
    ['From', from],
    ['To', o.sms ? '+14155550199' : 'whatsapp:+14155550199'],
    ['Body', String(o.text ?? 'hello from send-webhook')],
    ['NumMedia', '0'],
  ]
  if (typeof o.status === 'string') params.push(['MessageStatus', o.status])
  const url = `${base}/webhooks/twilio`
  // The gateway checks against PUBLIC_BASE_URL when it is set: sign what Twilio would sign.
  const publicBase = vars.PUBLIC_BASE_URL?.replace(/\/+$/, '')
  const signedUrl = publicBase ? `${publicBase}/webhooks/twilio` : url
  return {
    url,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': await twilioSignature(secret, signedUrl, params),
    },
    body: new URLSearchParams(params).toString(),
  }
}

function buildTelegram(base: string, vars: Record<string, string>, o: Options): Built {
  const chatId = Number(o.chat ?? 7)
  const now = Math.floor(Date.now() / 1000)
  const message: Record<string, unknown> = {
    message_id: Number(o['message-id'] ?? Math.floor(Math.random() * 1e6)),
    date: now,
    chat: { id: chatId, type: 'private', first_name: 'Local' },
    from: { id: chatId, is_bot: false, first_name: 'Local' },
    text: String(o.text ?? 'hello from send-webhook'),
  }
  if (o.edit) message.edit_date = now
  const update = {
    update_id: Number(o.id ?? Math.floor(Math.random() * 2 ** 31)),
    [o.edit ? 'edited_message' : 'message']: message,
  }
  // A bot of TELEGRAM_SECRET_TOKENS_BY_BOT (or --tenant) has its own path; else the bare one.
  const { tenant: bot, secret } = signer(
    vars,
    'TELEGRAM_SECRET_TOKENS_BY_BOT',
    'TELEGRAM_SECRET_TOKEN',
    tenantOption(o),
  )
  return {
    url: `${base}/webhooks/telegram${bot === undefined ? '' : `/${bot}`}`,
    headers: {
      'content-type': 'application/json',
      [TELEGRAM_SECRET_HEADER]: secret,
    },
    body: JSON.stringify(update),
  }
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
      tenant: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  const vendor = positionals[0]
  if (values.help || !vendor || !['slack', 'twilio', 'telegram'].includes(vendor)) {
    console.log(USAGE)
    process.exitCode = values.help ? 0 : 2
    return
  }
  const vars = loadDevVars({
    root: process.cwd(),
    alsoFromEnvironment: SECRET_NAMES,
    warn: (m) => console.error(m),
  }).values
  const base = (values.url ?? process.env.WORKER_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '')
  const built =
    vendor === 'slack'
      ? await buildSlack(base, vars, values)
      : vendor === 'twilio'
        ? await buildTwilio(base, vars, values)
        : buildTelegram(base, vars, values)

  if (values.curl) {
    console.log(toCurl(built))
    return
  }
  const times = Math.max(1, Number(values.times ?? 1))
  for (let i = 1; i <= times; i++) {
    const response = await fetch(built.url, {
      method: 'POST',
      headers: built.headers,
      body: built.body,
    })
    const text = (await response.text()).slice(0, 200)
    console.log(`${i}/${times} ${vendor} -> ${response.status} ${text}`)
  }
}

main().catch((err: Error) => {
  console.error(err.message)
  process.exitCode = 1
})
