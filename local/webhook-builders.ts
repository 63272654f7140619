/**
 * One signed request per vendor for `send-webhook`, built with the fixtures the tests use
 * (local/vendor-deliveries.ts) and the secrets of the dev stack: what `npm run dev` would get from
 * that vendor.
 * @module
 */
import { parseTenantSecrets } from '../worker/channels/tenant-secrets'
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
import {
  type Built,
  built,
  given,
  type Options,
  signer,
  slackTeamOf,
  tenantOption,
} from './webhook-signing'

export const VENDORS = [
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
export type Vendor = (typeof VENDORS)[number]

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

export const BUILDERS: Record<
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
