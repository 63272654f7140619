/**
 * The worst unauthenticated request each channel can be sent: a body of the channel's maximum size
 * built to make whatever runs before the signature is checked as slow as it can be (deep JSON
 * nesting, thousands of form parameters, an unclosed `<![CDATA[` repeated, a token that names a
 * held key but is signed by another), signed with a secret no gateway holds. What the gateway
 * may do with it before its verdict is bounded linear work (docs/design.md, "Before the
 * signature"); the workerd test (test/channels/pre-verification.workers.test.ts) checks no parser
 * runs on it, and `npm run bench` (phase `pre-verification`) times it against the same channel's
 * smallest forged request. Each entry also has that smallest one.
 * @module
 */
import { META_MAX_BODY_BYTES } from '../worker/channels/meta-webhook'
import { wechatSignature } from '../worker/channels/wechat-crypto'
import { MAX_BODY_BYTES } from '../worker/settings'
import {
  API_TEST_KEY_SHA256,
  FORGED_SECRET,
  LINE_TEST_SECRET,
  lineRequest,
  metaRequest,
  nowSeconds,
  SLACK_APP,
  slackRequest,
  TEAMS_APP,
  type TeamsSigner,
  TWILIO_ACCOUNT,
  teamsKeyDocuments,
  teamsRequest,
  teamsSigner,
  teamsToken,
  telegramRequest,
  WECHAT_ACCOUNT,
  WECHAT_AES_ACCOUNT,
  WECHAT_TEST_AES_KEY,
  WECHAT_TEST_APP_ID,
  WECHAT_TEST_TOKEN,
} from './vendor-deliveries'

export interface CraftedRequest {
  /** The channel and, where it has two, the mode (`wechat-aes`). */
  name: string
  /** The request of the channel's maximum size, built to be the slowest to refuse. */
  worst(base: string): Promise<Request>
  /** The same channel's smallest forged request: what the worst is timed against. */
  smallest(base: string): Promise<Request>
}

/** A Teams key the gateway holds, and another with the same `kid` that signs the forged tokens. */
export interface CraftedTeamsKeys {
  held: TeamsSigner
  forger: TeamsSigner
}

export async function craftedTeamsKeys(): Promise<CraftedTeamsKeys> {
  const held = await teamsSigner()
  const other = await teamsSigner()
  return { held, forger: { ...other, kid: held.kid } }
}

/** Puts the held key's metadata and JWKS on a local key-documents server (local/key-documents.ts). */
export async function publishCraftedKeys(base: string, keys: CraftedTeamsKeys): Promise<string> {
  const documents = teamsKeyDocuments(`${base}/keys`, [keys.held])
  await fetch(`${base}/openid`, { method: 'PUT', body: JSON.stringify(documents.metadata) })
  await fetch(`${base}/keys`, { method: 'PUT', body: JSON.stringify(documents.jwks) })
  return `${base}/openid`
}

/**
 * The bindings under which every crafted request reaches its channel's verifier with the most to
 * read first: Slack and Twilio per tenant (the app and the account are read from the body to pick
 * the secrets), a WeChat account in each mode, Teams' keys at `teamsMetadataUrl`.
 */
export function craftedBindings(teamsMetadataUrl: string): Record<string, string> {
  return {
    SLACK_SIGNING_SECRETS_BY_APP: `${SLACK_APP}=test-slack-signing-secret`,
    TWILIO_AUTH_TOKENS_BY_ACCOUNT: `${TWILIO_ACCOUNT}=test-twilio-auth-token`,
    TELEGRAM_SECRET_TOKEN: 'test-telegram-secret-token',
    TELEGRAM_BOT_ID: '424242',
    WHATSAPP_APP_SECRET: 'test-whatsapp-app-secret',
    WHATSAPP_VERIFY_TOKEN: 'test-whatsapp-verify-token',
    LINE_CHANNEL_SECRET: LINE_TEST_SECRET,
    MESSENGER_APP_SECRET: 'test-meta-app-secret',
    MESSENGER_VERIFY_TOKEN: 'test-meta-verify-token',
    INSTAGRAM_APP_SECRET: 'test-meta-app-secret',
    INSTAGRAM_VERIFY_TOKEN: 'test-meta-verify-token',
    WECHAT_TOKENS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_TOKEN},${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_TOKEN}`,
    WECHAT_AES_KEYS_BY_ACCOUNT: `${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_AES_KEY}`,
    WECHAT_APP_IDS_BY_ACCOUNT: `${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_APP_ID}`,
    TEAMS_APP_IDS: TEAMS_APP,
    TEAMS_OPENID_METADATA_URL: teamsMetadataUrl,
    API_KEYS: JSON.stringify({ [API_TEST_KEY_SHA256]: 'test-tenant' }),
  }
}

/** `unit` repeated to exactly `bytes` bytes (ASCII units), between `head` and `tail`. */
function filled(bytes: number, unit: string, head = '', tail = ''): string {
  const room = bytes - head.length - tail.length
  const body = unit.repeat(Math.floor(room / unit.length))
  return head + body + ' '.repeat(room - body.length) + tail
}

/** As many parameters of distinct names as the bytes allow (each one to sort), after `head`. */
function distinctParameters(bytes: number, head: string): string {
  let body = head
  for (let i = 0; body.length + `&p${i}=`.length <= bytes; i++) body += `&p${i}=`
  return body.padEnd(bytes, 'x')
}

/** JSON nested as deep as the bytes allow, naming a tenant first (what a pre-read looks for). */
const deepJson = (bytes: number, head: string) => filled(bytes, '[', head)

/** A WeChat query signed with a token no gateway holds. */
async function forgedWeChatQuery(encrypted: boolean): Promise<string> {
  const timestamp = String(nowSeconds())
  const nonce = '1514711492'
  const signature = await wechatSignature([FORGED_SECRET.replaceAll('-', ''), timestamp, nonce])
  const query = new URLSearchParams({ signature, timestamp, nonce })
  if (encrypted) {
    query.set('encrypt_type', 'aes')
    query.set('msg_signature', signature)
  }
  return `${query}`
}

/** Unclosed CDATA sections, each starting again: what a CDATA-skipping regex is quadratic on. */
const unclosedCdata = (bytes: number, head = '<xml>') => filled(bytes, '<![CDATA[', head)

function wechat(name: string, account: string, encrypted: boolean): CraftedRequest {
  const post = async (base: string, body: string) =>
    new Request(`${base}/webhooks/wechat/${account}?${await forgedWeChatQuery(encrypted)}`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml' },
      body,
    })
  return {
    name,
    worst: (base) => post(base, unclosedCdata(MAX_BODY_BYTES.default)),
    smallest: (base) => post(base, '<xml></xml>'),
  }
}

function meta(name: string, path: string, object: string): CraftedRequest {
  const post = (base: string, body: string) =>
    metaRequest(`${base}/webhooks/${path}`, body, FORGED_SECRET)
  return {
    name,
    worst: (base) => post(base, deepJson(META_MAX_BODY_BYTES, `{"object":"${object}","entry":`)),
    smallest: (base) => post(base, '{}'),
  }
}

/** Every channel's crafted requests; Teams' forged tokens are signed by `teams.forger`. */
export function craftedRequests(teams: CraftedTeamsKeys): CraftedRequest[] {
  const max = MAX_BODY_BYTES.default
  const slack = (base: string, body: string) =>
    slackRequest(`${base}/webhooks/slack`, body, { secret: FORGED_SECRET })
  const twilio = (base: string, body: string) =>
    new Request(`${base}/webhooks/twilio`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': 'Zm9yZ2VkLXNpZ25hdHVyZS1vZi10d2lsaW8=',
      },
      body,
    })
  const teamsPost = async (base: string, body: string) =>
    teamsRequest(`${base}/webhooks/teams`, body, await teamsToken(teams.forger, { aud: TEAMS_APP }))
  const api = (base: string, body: string) =>
    new Request(`${base}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer forged-api-key',
        'content-type': 'application/json',
        'idempotency-key': '"crafted"',
      },
      body,
    })
  return [
    {
      name: 'slack',
      worst: (base) => slack(base, deepJson(max, `{"api_app_id":"${SLACK_APP}","event":`)),
      smallest: (base) => slack(base, `{"api_app_id":"${SLACK_APP}"}`),
    },
    {
      name: 'twilio',
      worst: async (base) => twilio(base, distinctParameters(max, `AccountSid=${TWILIO_ACCOUNT}`)),
      smallest: async (base) => twilio(base, `AccountSid=${TWILIO_ACCOUNT}`),
    },
    {
      name: 'telegram',
      worst: async (base) =>
        telegramRequest(`${base}/webhooks/telegram`, deepJson(max, '{"message":'), FORGED_SECRET),
      smallest: async (base) => telegramRequest(`${base}/webhooks/telegram`, '{}', FORGED_SECRET),
    },
    meta('whatsapp-cloud', 'whatsapp-cloud', 'whatsapp_business_account'),
    meta('messenger', 'messenger', 'page'),
    meta('instagram', 'instagram', 'instagram'),
    {
      name: 'line',
      worst: (base) =>
        lineRequest(`${base}/webhooks/line`, deepJson(max, '{"events":'), FORGED_SECRET),
      smallest: (base) => lineRequest(`${base}/webhooks/line`, '{}', FORGED_SECRET),
    },
    wechat('wechat', WECHAT_ACCOUNT, false),
    wechat('wechat-aes', WECHAT_AES_ACCOUNT, true),
    {
      name: 'teams',
      worst: (base) => teamsPost(base, deepJson(max, '{"channelId":"msteams","x":')),
      smallest: (base) => teamsPost(base, '{}'),
    },
    {
      name: 'api',
      worst: async (base) => api(base, deepJson(max, '{"customer":')),
      smallest: async (base) => api(base, '{}'),
    },
  ]
}
