/**
 * WeChat Official Accounts fixtures: XML pushes, signed in the query, optionally AES-encrypted.
 * @module
 */
import { encryptWeChat, wechatSignature } from '../../worker/channels/wechat-crypto'
import { FORGED_SECRET, nowSeconds, randomBelow, type SignedDelivery, type Signing } from './common'

/** The tests' Official Account (its `gh_` original id: the path and every push's ToUserName). */
export const WECHAT_ACCOUNT = 'gh_0123456789ab'
export const WECHAT_TEST_TOKEN = 'testwechattoken'
/** An EncodingAESKey (43 characters) and the AppID its plaintexts end with. */
export const WECHAT_TEST_AES_KEY = 'TestWeChatEncodingAesKey0123456789abcdefABC'
export const WECHAT_TEST_APP_ID = 'wx0123456789abcdef'

/** The tests' encrypting account (safe mode: it takes encrypted pushes only). */
export const WECHAT_AES_ACCOUNT = 'gh_0123456789ae'

/** WECHAT_ACCOUNT in plain mode, WECHAT_AES_ACCOUNT in safe mode, as the Worker's bindings. */
export const WECHAT_TEST_BINDINGS = {
  WECHAT_TOKENS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_TOKEN},${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_TOKEN}`,
  WECHAT_AES_KEYS_BY_ACCOUNT: `${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_AES_KEY}`,
  WECHAT_APP_IDS_BY_ACCOUNT: `${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_APP_ID}`,
}

/** A push's fields, in WeChat's order; strings become CDATA, digits stay bare. */
export type WeChatFields = Record<string, string>

/** A text message as WeChat pushes it (MsgId a 64-bit decimal, beyond 2^53). */
export function wechatText(
  msgId: string,
  content: string,
  fields: { account?: string; from?: string; createTime?: number } = {},
): WeChatFields {
  return {
    ToUserName: fields.account ?? WECHAT_ACCOUNT,
    FromUserName: fields.from ?? 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o',
    CreateTime: String(fields.createTime ?? nowSeconds()),
    MsgType: 'text',
    Content: content,
    MsgId: msgId,
  }
}

/** A fresh MsgId: 19 digits, as WeChat's are. */
export const wechatMsgId = (): string =>
  `6${String(randomBelow(1e9)).padStart(9, '0')}${String(randomBelow(1e9)).padStart(9, '0')}`

export function wechatXml(fields: WeChatFields): string {
  const element = ([name, value]: [string, string]) =>
    /^\d+$/.test(value) ? `<${name}>${value}</${name}>` : `<${name}><![CDATA[${value}]]></${name}>`
  return `<xml>${Object.entries(fields).map(element).join('')}</xml>`
}

/** How a push is signed: plain (`signature`), or encrypted with an EncodingAESKey. */
export interface WeChatSigning {
  token?: string
  /** Encrypted mode (`encrypt_type=aes`, `msg_signature`) under this key. */
  aesKey?: string
  appId?: string
  timestamp?: number
  nonce?: string
}

/** A push as WeChat POSTs it to `url`: signed in the query, the XML (or its envelope) the body. */
export async function wechatRequest(
  url: string,
  xml: string,
  signing: WeChatSigning = {},
): Promise<Request> {
  const token = signing.token ?? WECHAT_TEST_TOKEN
  const timestamp = String(signing.timestamp ?? nowSeconds())
  const nonce = signing.nonce ?? String(randomBelow(2 ** 31))
  const query = new URLSearchParams({
    signature: await wechatSignature([token, timestamp, nonce]),
    timestamp,
    nonce,
    openid: 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o',
  })
  let body = xml
  if (signing.aesKey) {
    const encrypt = await encryptWeChat(xml, signing.aesKey, signing.appId ?? WECHAT_TEST_APP_ID)
    query.set('encrypt_type', 'aes')
    query.set('msg_signature', await wechatSignature([token, timestamp, nonce, encrypt]))
    const to = /<ToUserName><!\[CDATA\[([^\]]*)\]\]>/.exec(xml)?.[1] ?? ''
    body = `<xml><ToUserName><![CDATA[${to}]]></ToUserName><Encrypt><![CDATA[${encrypt}]]></Encrypt></xml>`
  }
  return new Request(`${url}?${query}`, {
    method: 'POST',
    headers: { 'content-type': 'text/xml' },
    body,
  })
}

/**
 * A WeChat text message with a fresh MsgId unless given, to `/webhooks/wechat/{account}`; every
 * `request` is signed anew (WeChat's retries carry a new timestamp and nonce; encrypted, a new
 * ciphertext too).
 */
export function wechatDelivery(
  fields: { msgId?: string; text?: string; account?: string } & Signing & WeChatSigning = {},
): SignedDelivery {
  const msgId = fields.msgId ?? wechatMsgId()
  const account = fields.account ?? WECHAT_ACCOUNT
  const xml = wechatXml(wechatText(msgId, fields.text ?? 'hi', { account }))
  const token = fields.forged ? FORGED_SECRET.replace(/-/g, '') : (fields.secret ?? fields.token)
  return {
    channel: 'wechat',
    messageKey: `${account}:${msgId}`,
    deliveryKey: `dedup:wechat:${account}:${msgId}`,
    request: (base) =>
      wechatRequest(`${base}/webhooks/wechat/${account}`, xml, {
        ...fields,
        ...(token ? { token } : {}),
      }),
  }
}
