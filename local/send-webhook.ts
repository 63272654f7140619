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
import { parseTenantSecrets } from '../worker/tenants'
import { loadDevVars } from './dev-vars'
import { startKeyDocuments } from './key-documents'
import {
  LINE_DESTINATION,
  lineEventId,
  lineMessageId,
  linePost,
  lineText,
  lineUnsend,
  META_PAGE,
  messagingBody,
  messagingEvent,
  messagingText,
  metaMid,
  metaRequest,
  randomHex,
  slackDelivery,
  teamsActivity,
  teamsDevSigner,
  teamsKeyDocuments,
  teamsRequest,
  teamsToken,
  telegramDelivery,
  twilioDelivery,
  waText,
  wechatDelivery,
  whatsappCloudPost,
} from './vendor-deliveries'

const VENDORS = [
  'slack',
  'twilio',
  'telegram',
  'whatsapp-cloud',
  'line',
  'messenger',
  'instagram',
  'wechat',
  'teams',
] as const
type Vendor = (typeof VENDORS)[number]

const USAGE = `usage: tsx local/send-webhook.ts ${VENDORS.join('|')} [options]
  --url URL          gateway base URL (default $WORKER_URL or http://127.0.0.1:8787)
  --text TEXT        message text
  --id ID            reuse a delivery id: Slack event_id, Twilio MessageSid, Telegram update_id,
                     WhatsApp message id (wamid), LINE webhookEventId, Messenger / Instagram mid,
                     WeChat MsgId, Teams activity id
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
  teams:    --edit (a messageUpdate of --id) --delete (a messageDelete of --id)`

interface Built {
  url: string
  headers: Record<string, string>
  body: string
  /** What must run while it is sent (Teams: the signing keys), and how to stop it. */
  serve?: () => Promise<() => Promise<void>>
}

type Options = Record<string, string | boolean | undefined>

const SECRET_NAMES = [
  'SLACK_SIGNING_SECRET',
  'TWILIO_AUTH_TOKEN',
  'TELEGRAM_SECRET_TOKEN',
  'TELEGRAM_BOT_ID',
  'SLACK_SIGNING_SECRETS_BY_APP',
  'SLACK_TEAMS_BY_APP',
  'TWILIO_AUTH_TOKENS_BY_ACCOUNT',
  'TELEGRAM_SECRET_TOKENS_BY_BOT',
  'WHATSAPP_APP_SECRET',
  'WHATSAPP_APP_SECRETS_BY_APP',
  'WHATSAPP_PHONE_NUMBERS_BY_APP',
  'LINE_CHANNEL_SECRET',
  'LINE_CHANNEL_SECRETS_BY_DESTINATION',
  'MESSENGER_APP_SECRET',
  'MESSENGER_APP_SECRETS_BY_APP',
  'MESSENGER_PAGES_BY_APP',
  'INSTAGRAM_APP_SECRET',
  'INSTAGRAM_APP_SECRETS_BY_APP',
  'INSTAGRAM_ACCOUNTS_BY_APP',
  'WECHAT_TOKENS_BY_ACCOUNT',
  'WECHAT_AES_KEYS_BY_ACCOUNT',
  'WECHAT_APP_IDS_BY_ACCOUNT',
  'TEAMS_APP_IDS',
  'TEAMS_OPENID_METADATA_URL',
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

/** The first workspace SLACK_TEAMS_BY_APP lists for `app` (the gateway refuses others), else T0LOCAL. */
function slackTeamOf(vars: Record<string, string>, app: string | undefined): string {
  const any = { test: () => true, hint: '' }
  const teams = parseTenantSecrets('SLACK_TEAMS_BY_APP', vars.SLACK_TEAMS_BY_APP, any, [])
  return (app === undefined ? undefined : teams?.get(app)?.[0]) ?? 'T0LOCAL'
}

const tenantOption = (o: Options) => (typeof o.tenant === 'string' ? o.tenant : undefined)

/** An option's value, when it was given. */
const given = (o: Options, name: string) => (typeof o[name] === 'string' ? o[name] : undefined)

/** The request, as what a curl command or a fetch sends. */
async function built(request: Promise<Request>): Promise<Built> {
  const r = await request
  return { url: r.url, headers: Object.fromEntries(r.headers), body: await r.text() }
}

function buildSlack(base: string, vars: Record<string, string>, o: Options): Promise<Built> {
  const signed = signer(
    vars,
    'SLACK_SIGNING_SECRETS_BY_APP',
    'SLACK_SIGNING_SECRET',
    tenantOption(o),
  )
  const delivery = slackDelivery({
    eventId: given(o, 'id'),
    ts: given(o, 'ts'),
    team: slackTeamOf(vars, signed.tenant),
    appId: signed.tenant ?? 'A0LOCAL',
    channel: given(o, 'channel') ?? 'C0LOCAL',
    user: given(o, 'user') ?? 'U0LOCAL',
    text: given(o, 'text') ?? 'hello from send-webhook',
    secret: signed.secret,
  })
  return built(delivery.request(base))
}

function buildTwilio(base: string, vars: Record<string, string>, o: Options): Promise<Built> {
  const signed = signer(vars, 'TWILIO_AUTH_TOKENS_BY_ACCOUNT', 'TWILIO_AUTH_TOKEN', tenantOption(o))
  const delivery = twilioDelivery({
    messageSid: given(o, 'id'),
    accountSid: signed.tenant ?? 'AC00000000000000000000000000000000',
    from: given(o, 'from') ?? (o.sms ? '+14155550100' : 'whatsapp:+14155550100'),
    to: o.sms ? '+14155550199' : 'whatsapp:+14155550199',
    body: given(o, 'text') ?? 'hello from send-webhook',
    status: given(o, 'status'),
    secret: signed.secret,
    // The gateway checks against PUBLIC_BASE_URL when it is set: sign what Twilio would sign.
    publicBaseUrl: vars.PUBLIC_BASE_URL?.replace(/\/+$/, '') || undefined,
  })
  return built(delivery.request(base))
}

function buildTelegram(base: string, vars: Record<string, string>, o: Options): Promise<Built> {
  const now = Math.floor(Date.now() / 1000)
  // A bot of TELEGRAM_SECRET_TOKENS_BY_BOT (or --tenant) has its own path; else the bare one.
  const signed = signer(
    vars,
    'TELEGRAM_SECRET_TOKENS_BY_BOT',
    'TELEGRAM_SECRET_TOKEN',
    tenantOption(o),
  )
  const id = given(o, 'id')
  const delivery = telegramDelivery({
    updateId: id === undefined ? undefined : Number(id),
    chatId: Number(o.chat ?? 7),
    messageId: Number(o['message-id'] ?? Math.floor(Math.random() * 1e6)),
    text: given(o, 'text') ?? 'hello from send-webhook',
    date: now,
    ...(o.edit ? { field: 'edited_message', editDate: now } : {}),
    bot: signed.tenant,
    secret: signed.secret,
  })
  return built(delivery.request(base))
}

/** A Meta POST with one text message, for a phone number the app writes for. */
function buildWhatsappCloud(
  base: string,
  vars: Record<string, string>,
  o: Options,
): Promise<Built> {
  const signed = signer(vars, 'WHATSAPP_APP_SECRETS_BY_APP', 'WHATSAPP_APP_SECRET', tenantOption(o))
  const numbers = parseTenantSecrets(
    'WHATSAPP_PHONE_NUMBERS_BY_APP',
    vars.WHATSAPP_PHONE_NUMBERS_BY_APP,
    { test: () => true, hint: '' },
    [],
  )
  const phoneNumberId =
    given(o, 'phone-number-id') ??
    (signed.tenant ? numbers?.get(signed.tenant)?.[0] : undefined) ??
    '106540352242922'
  const id = given(o, 'id') ?? `wamid.LOCAL${randomHex(12)}`
  const text = given(o, 'text') ?? 'hello from send-webhook'
  const post = whatsappCloudPost([{ phoneNumberId, messages: [waText(id, text)] }], {
    secret: signed.secret,
  })
  return built(post.request(base))
}

/** A LINE POST with one text message (or the unsend of one), for the signing bot. */
function buildLine(base: string, vars: Record<string, string>, o: Options): Promise<Built> {
  const signed = signer(
    vars,
    'LINE_CHANNEL_SECRETS_BY_DESTINATION',
    'LINE_CHANNEL_SECRET',
    tenantOption(o),
  )
  const fields = { webhookEventId: given(o, 'id') ?? lineEventId() }
  const messageId = given(o, 'message-id') ?? lineMessageId()
  const text = given(o, 'text') ?? 'hello from send-webhook'
  const event = o.unsend ? lineUnsend(messageId, fields) : lineText(messageId, text, fields)
  const post = linePost([event], {
    secret: signed.secret,
    destination: signed.tenant ?? LINE_DESTINATION,
  })
  return built(post.request(base))
}

/**
 * A Messenger (`object: page`) or Instagram POST with one text message, or with `--edit` the edit
 * of the `--id` one, for an account the app writes for.
 */
function metaMessaging(name: 'messenger' | 'instagram', object: string, idsVariable: string) {
  const prefix = name.toUpperCase()
  return (base: string, vars: Record<string, string>, o: Options): Promise<Built> => {
    const signed = signer(
      vars,
      `${prefix}_APP_SECRETS_BY_APP`,
      `${prefix}_APP_SECRET`,
      tenantOption(o),
    )
    const any = { test: () => true, hint: '' }
    const accounts = parseTenantSecrets(idsVariable, vars[idsVariable], any, [])
    const account =
      given(o, 'account') ??
      (signed.tenant ? accounts?.get(signed.tenant)?.[0] : undefined) ??
      META_PAGE
    const mid = given(o, 'id') ?? metaMid()
    const text = given(o, 'text') ?? 'hello from send-webhook'
    const recipient = { recipient: account }
    const event = o.edit
      ? messagingEvent({ message_edit: { mid, text, num_edit: 1 } }, recipient)
      : messagingText(mid, text, recipient)
    const body = messagingBody(object, [{ id: account, messaging: [event] }])
    return built(metaRequest(`${base}/webhooks/${name}`, body, signed.secret))
  }
}

/**
 * A WeChat text message to `/webhooks/wechat/{account}`, signed with the account's first token;
 * encrypted with its first EncodingAESKey and its AppID when WECHAT_AES_KEYS_BY_ACCOUNT lists it.
 */
function buildWeChat(base: string, vars: Record<string, string>, o: Options): Promise<Built> {
  const signed = signer(
    vars,
    'WECHAT_TOKENS_BY_ACCOUNT',
    'WECHAT_TOKENS_BY_ACCOUNT',
    tenantOption(o),
  )
  const account = signed.tenant
  if (account === undefined) throw new Error('WECHAT_TOKENS_BY_ACCOUNT names no account')
  const any = { test: () => true, hint: '' }
  const firstOf = (name: string) => parseTenantSecrets(name, vars[name], any, [])?.get(account)?.[0]
  const aesKey = firstOf('WECHAT_AES_KEYS_BY_ACCOUNT')
  const appId = firstOf('WECHAT_APP_IDS_BY_ACCOUNT')
  const delivery = wechatDelivery({
    account,
    token: signed.secret,
    msgId: given(o, 'id'),
    text: given(o, 'text') ?? 'hello from send-webhook',
    ...(aesKey ? { aesKey, ...(appId ? { appId } : {}) } : {}),
  })
  return built(delivery.request(base))
}

/** A Teams activity for the bot `--tenant` (else the first of TEAMS_APP_IDS), with its token. */
async function buildTeams(base: string, vars: Record<string, string>, o: Options): Promise<Built> {
  const appId = tenantOption(o) ?? vars.TEAMS_APP_IDS?.split(',')[0]?.trim()
  if (!appId)
    throw new Error('TEAMS_APP_IDS is not set (environment, .dev.vars or .dev.vars.example)')
  const signer = await teamsDevSigner()
  const change = o.edit
    ? { type: 'messageUpdate', eventType: 'editMessage' }
    : o.delete
      ? { type: 'messageDelete', eventType: 'softDeleteMessage' }
      : {}
  const activity = teamsActivity({
    id: given(o, 'id'),
    text: given(o, 'text') ?? 'hello from send-webhook',
    appId,
    ...change,
  })
  const token = await teamsToken(signer, { aud: appId })
  const request = await built(
    Promise.resolve(teamsRequest(`${base}/webhooks/teams`, activity, token)),
  )
  const metadataUrl = vars.TEAMS_OPENID_METADATA_URL
  const local = metadataUrl ? new URL(metadataUrl) : null
  const isLocal = local?.protocol === 'http:' && ['127.0.0.1', 'localhost'].includes(local.hostname)
  if (!local || !isLocal) return request
  const { metadata, jwks } = teamsKeyDocuments(`${local.origin}/keys`, [signer])
  const documents = { [local.pathname]: metadata, '/keys': jwks }
  return {
    ...request,
    async serve() {
      const server = await startKeyDocuments({ port: Number(local.port || 80), documents })
      return () => server.close()
    },
  }
}

const BUILDERS: Record<
  Vendor,
  (base: string, vars: Record<string, string>, o: Options) => Promise<Built>
> = {
  slack: buildSlack,
  twilio: buildTwilio,
  telegram: buildTelegram,
  'whatsapp-cloud': buildWhatsappCloud,
  line: buildLine,
  messenger: metaMessaging('messenger', 'page', 'MESSENGER_PAGES_BY_APP'),
  instagram: metaMessaging('instagram', 'instagram', 'INSTAGRAM_ACCOUNTS_BY_APP'),
  wechat: buildWeChat,
  teams: buildTeams,
}

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

function isVendor(name: string | undefined): name is Vendor {
  return (VENDORS as readonly string[]).includes(name ?? '')
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
      help: { type: 'boolean', short: 'h' },
    },
  })
  const vendor = positionals[0]
  if (values.help || !isVendor(vendor)) {
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
  const request = await BUILDERS[vendor](base, vars, values)

  if (values.curl) {
    console.log(toCurl(request))
    return
  }
  const times = Math.max(1, Number(values.times ?? 1))
  const stop = await request.serve?.()
  try {
    await sendTimes(vendor, request, times)
  } finally {
    await stop?.()
  }
}

async function sendTimes(vendor: Vendor, request: Built, times: number): Promise<void> {
  for (let i = 1; i <= times; i++) {
    const response = await fetch(request.url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
    })
    const text = (await response.text()).slice(0, 200)
    const decision = describeDecision(response.headers.get(DECISION_HEADER))
    console.log(`${i}/${times} ${vendor} -> ${response.status} ${decision} ${text}`)
  }
}

main().catch((err: Error) => {
  console.error(err.message)
  process.exitCode = 1
})
