/**
 * WeChat's official vectors (/work/shared/reference/console-idempotency-channels.md §3.2), used
 * by the Node and the workerd tests alike.
 */

/** [name, token, timestamp, nonce, signature]: `sha1(sort(token, timestamp, nonce))`. */
export const WECHAT_PLAIN_VECTORS = [
  // https://developers.weixin.qq.com/doc/subscription/guide/dev/push/encryption.html
  [
    'subscription encryption.html',
    'AAAAA',
    '1714037059',
    '486452656',
    '899cf89e464efb63f54ddac96b0a0a235f53aa78',
  ],
  // https://developers.weixin.qq.com/minigame/dev/guide/base-ability/message-push.md
  [
    'minigame message-push.md',
    'AAAAA',
    '1714036504',
    '1514711492',
    'f464b24fc39322e44b38aa78f5edd27bd1441696',
  ],
] as const

/**
 * Tencent's WXBizMsgCrypt sample (cryptoDemo.zip; the same values in its Python, Java and Node
 * ports): a text message encrypted for AppID wx2c2769f8efd9abc2 under the sample key.
 */
export const TENCENT_SAMPLE = {
  account: 'gh_10f6c3c3ac5a',
  token: 'spamtest',
  encodingAesKey: 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG',
  appId: 'wx2c2769f8efd9abc2',
  timestamp: '1409735669',
  nonce: '1320562132',
  msgSignature: '5d197aaffba7e9b25a30732f161a50dee96bd5fa',
  encrypt:
    'hyzAe4OzmOMbd6TvGdIOO6uBmdJoD0Fk53REIHvxYtJlE2B655HuD0m8KUePWB3+LrPXo87wzQ1QLvbeUgmBM4x6F8PGHQHFVAFmOD2LdJF9FrXpbUAh0B5GIItb52sn896wVsMSHGuPE328HnRGBcrS7C41IzDWyWNlZkyyXwon8T332jisa+h6tEDYsVticbSnyU8dKOIbgU6ux5VTjg3yt+WGzjlpKn6NPhRjpA912xMezR4kw6KWwMrCVKSVCZciVGCgavjIQ6X8tCOp3yZbGpy0VxpAe+77TszTfRd5RJSVO/HTnifJpXgCSUdUue1v6h0EIBYYI1BD1DlD+C0CR8e6OewpusjZ4uBl9FyJvnhvQl+q5rv1ixrcpCumEPo5MJSgM9ehVsNPfUM669WuMyVWQLCzpu9GhglF2PE=',
  /** Its plaintext, as Tencent's sample prints it. */
  message:
    '<xml><ToUserName><![CDATA[gh_10f6c3c3ac5a]]></ToUserName>\n<FromUserName><![CDATA[oyORnuP8q7ou2gfYjqLzSIWZf0rs]]></FromUserName>\n<CreateTime>1409735668</CreateTime>\n<MsgType><![CDATA[text]]></MsgType>\n<Content><![CDATA[abcdteT]]></Content>\n<MsgId>6054768590064713728</MsgId>\n</xml>',
} as const

/** The sample's POST: the compatible-mode body (plaintext fields and `<Encrypt>`), its query. */
export function tencentSampleRequest(base = 'https://gateway.test'): Request {
  const s = TENCENT_SAMPLE
  const query = `timestamp=${s.timestamp}&nonce=${s.nonce}&encrypt_type=aes&msg_signature=${s.msgSignature}`
  const body = `<xml><ToUserName><![CDATA[gh_10f6c3c3ac5a]]></ToUserName><FromUserName><![CDATA[oyORnuP8q7ou2gfYjqLzSIWZf0rs]]></FromUserName><CreateTime>1409735668</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[abcdteT]]></Content><MsgId>6054768590064713728</MsgId><Encrypt><![CDATA[${s.encrypt}]]></Encrypt></xml>`
  return new Request(`${base}/webhooks/wechat/${s.account}?${query}`, { method: 'POST', body })
}

/** The sample's settings, as the Worker's bindings. */
export const TENCENT_SAMPLE_BINDINGS = {
  WECHAT_TOKENS_BY_ACCOUNT: `${TENCENT_SAMPLE.account}=${TENCENT_SAMPLE.token}`,
  WECHAT_AES_KEYS_BY_ACCOUNT: `${TENCENT_SAMPLE.account}=${TENCENT_SAMPLE.encodingAesKey}`,
  WECHAT_APP_IDS_BY_ACCOUNT: `${TENCENT_SAMPLE.account}=${TENCENT_SAMPLE.appId}`,
}
