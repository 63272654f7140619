/**
 * The WeChat channel's pure parts, on Node: the official signature vectors and Tencent's
 * encrypted sample, the checks of a push (timestamp window, account, token, AES key rotation,
 * AppID, WeChat's 32-byte padding), the hardened XML parsing, the settings, and the keys and
 * content of each message type and of events.
 */
import { createCipheriv } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  nowSeconds,
  partsOf,
  WECHAT_ACCOUNT,
  WECHAT_TEST_AES_KEY,
  WECHAT_TEST_APP_ID,
  WECHAT_TEST_TOKEN,
  wechatRequest,
  wechatText,
  wechatXml,
} from '../../../local/vendor-deliveries'
import type { RequestParts } from '../../../worker/channels/types'
import {
  classifyWeChat,
  parseWeChat,
  verifyWeChat,
  verifyWeChatHandshake,
  type WeChatConfig,
  xmlRoot,
} from '../../../worker/channels/wechat'
import {
  decryptWeChat,
  encryptWeChat,
  wechatSignature,
} from '../../../worker/channels/wechat-crypto'
import { declaresDoctype, firstElementText } from '../../../worker/channels/xml-scan'
import { parseSettings } from '../../../worker/config'
import type { Env } from '../../../worker/env'
import { InvalidPayloadError } from '../../../worker/errors'
import {
  TENCENT_SAMPLE,
  TENCENT_SAMPLE_BINDINGS,
  tencentSampleRequest,
  WECHAT_PLAIN_VECTORS,
} from './wechat-fixtures'

const URL_ = `https://gateway.test/webhooks/wechat/${WECHAT_ACCOUNT}`
const OTHER = 'gh_ffffffffffff'
const OLD_KEY = 'OldWeChatEncodingAesKey0123456789abcdefABCD'

function config(bindings: Record<string, string>): WeChatConfig {
  const settings = parseSettings({
    ORIGIN_URL: 'http://o.test',
    ORIGIN_SHARED_SECRET: 'o',
    ...bindings,
  } as unknown as Env)
  const wechat = settings.wechat
  if (!wechat.ok) throw new Error(`not configured: ${wechat.missing}`)
  return wechat.value
}

const plain = config({
  WECHAT_TOKENS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_TOKEN}|oldtoken,${OTHER}=othertoken`,
})
const encrypted = config({
  WECHAT_TOKENS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_TOKEN},${OTHER}=othertoken`,
  WECHAT_AES_KEYS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_AES_KEY}|${OLD_KEY}`,
  WECHAT_APP_IDS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_APP_ID}`,
})

const textXml = (msgId = '6054768590064713728', account = WECHAT_ACCOUNT) =>
  wechatXml(wechatText(msgId, 'hello', { account }))

describe('WeChat signatures: the official vectors', () => {
  it.each(WECHAT_PLAIN_VECTORS)('plain %s', async (_name, token, timestamp, nonce, expected) => {
    expect(await wechatSignature([token, timestamp, nonce])).toBe(expected)
  })

  it("Tencent's sample: msg_signature over the four values, then decrypted to its text message", async () => {
    const s = TENCENT_SAMPLE
    expect(await wechatSignature([s.token, s.timestamp, s.nonce, s.encrypt])).toBe(s.msgSignature)
    expect(await decryptWeChat(s.encrypt, s.encodingAesKey, s.appId)).toBe(s.message)
  })

  it("Tencent's sample through the verifier, parser and classifier: MsgId stays the string it is", async () => {
    const parts = await partsOf(tencentSampleRequest())
    const at = () => Number(TENCENT_SAMPLE.timestamp) + 3
    const sample = config(TENCENT_SAMPLE_BINDINGS)
    expect(await verifyWeChat(parts, sample, TENCENT_SAMPLE.account, { nowSeconds: at })).toEqual({
      ok: true,
      tenant: TENCENT_SAMPLE.account,
    })
    const push = parseWeChat(parts)
    expect(push.MsgId).toBe('6054768590064713728')
    const delivery = await classifyWeChat(push)
    expect(delivery).toMatchObject({
      action: 'forward',
      key: { namespace: 'wechat', scope: 'gh_10f6c3c3ac5a', id: '6054768590064713728' },
      draft: {
        channel: 'wechat',
        tenant: 'gh_10f6c3c3ac5a',
        messageKey: 'gh_10f6c3c3ac5a:6054768590064713728',
        deliveryKey: 'dedup:wechat:gh_10f6c3c3ac5a:6054768590064713728',
        sender: { externalId: 'oyORnuP8q7ou2gfYjqLzSIWZf0rs' },
        body: 'abcdteT',
        occurredAt: '2014-09-03T09:14:28.000Z',
      },
    })
  })

  it("Tencent's sample with another AppID, another key, or outside the time window is refused", async () => {
    const s = TENCENT_SAMPLE
    const at = () => Number(s.timestamp)
    const parts = await partsOf(tencentSampleRequest())
    const otherApp = config({
      ...TENCENT_SAMPLE_BINDINGS,
      WECHAT_APP_IDS_BY_ACCOUNT: `${s.account}=wx0000000000000000`,
    })
    expect(await verifyWeChat(parts, otherApp, s.account, { nowSeconds: at })).toEqual({
      ok: false,
      reason: 'decrypt_failed',
    })
    const otherKey = config({
      ...TENCENT_SAMPLE_BINDINGS,
      WECHAT_AES_KEYS_BY_ACCOUNT: `${s.account}=${OLD_KEY}`,
    })
    expect(await verifyWeChat(parts, otherKey, s.account, { nowSeconds: at })).toEqual({
      ok: false,
      reason: 'decrypt_failed',
    })
    const late = () => Number(s.timestamp) + 301
    expect(
      await verifyWeChat(parts, config(TENCENT_SAMPLE_BINDINGS), s.account, { nowSeconds: late }),
    ).toEqual({ ok: false, reason: 'stale_timestamp' })
  })
})

describe('WeChat: plain-mode pushes', () => {
  it("verifies with the path's account's tokens, rotation included", async () => {
    for (const token of [WECHAT_TEST_TOKEN, 'oldtoken']) {
      const parts = await partsOf(await wechatRequest(URL_, textXml(), { token }))
      // Good once, for this body: the gateway claims the query's (timestamp, nonce) for it.
      expect(await verifyWeChat(parts, plain, WECHAT_ACCOUNT)).toMatchObject({
        ok: true,
        tenant: WECHAT_ACCOUNT,
        once: { key: { namespace: 'wechat-signature', scope: WECHAT_ACCOUNT }, ttlSeconds: 600 },
      })
    }
  })

  it("refuses another account's token, an unknown or invalid account, a missing or stale query", async () => {
    const other = await partsOf(await wechatRequest(URL_, textXml(), { token: 'othertoken' }))
    expect(await verifyWeChat(other, plain, WECHAT_ACCOUNT)).toEqual({
      ok: false,
      reason: 'signature_mismatch',
    })
    const good = await partsOf(await wechatRequest(URL_, textXml()))
    expect(await verifyWeChat(good, plain, 'gh_000000000000')).toEqual({
      ok: false,
      reason: 'unknown_tenant',
    })
    expect(await verifyWeChat(good, plain, '../admin')).toEqual({
      ok: false,
      reason: 'unknown_tenant',
    })
    const stale = await partsOf(
      await wechatRequest(URL_, textXml(), { timestamp: nowSeconds() - 301 }),
    )
    expect(await verifyWeChat(stale, plain, WECHAT_ACCOUNT)).toEqual({
      ok: false,
      reason: 'stale_timestamp',
    })
    const bare: RequestParts = { ...good, url: URL_ }
    expect(await verifyWeChat(bare, plain, WECHAT_ACCOUNT)).toEqual({
      ok: false,
      reason: 'missing_query',
    })
  })

  it('an account with an EncodingAESKey takes no plaintext push (its signature does not cover the body)', async () => {
    const parts = await partsOf(await wechatRequest(URL_, textXml()))
    expect(await verifyWeChat(parts, encrypted, WECHAT_ACCOUNT)).toEqual({
      ok: false,
      reason: 'plaintext_refused',
    })
  })
})

describe('WeChat: encrypted pushes', () => {
  it('decrypts with the current key and with the previous one (rotation)', async () => {
    for (const aesKey of [WECHAT_TEST_AES_KEY, OLD_KEY]) {
      const parts = await partsOf(await wechatRequest(URL_, textXml(), { aesKey }))
      expect(await verifyWeChat(parts, encrypted, WECHAT_ACCOUNT)).toEqual({
        ok: true,
        tenant: WECHAT_ACCOUNT,
      })
      expect(parseWeChat(parts)).toMatchObject({ Content: 'hello', MsgId: '6054768590064713728' })
    }
  })

  it('refuses a key no longer listed, a wrong AppID, a tampered envelope, a plain signature only', async () => {
    const unknownKey = 'UnknownWeChatEncodingAesKey0123456789abcdef'
    const cases: Array<[Promise<Request>, string]> = [
      [wechatRequest(URL_, textXml(), { aesKey: unknownKey }), 'decrypt_failed'],
      [
        wechatRequest(URL_, textXml(), {
          aesKey: WECHAT_TEST_AES_KEY,
          appId: 'wx1111111111111111',
        }),
        'decrypt_failed',
      ],
      [
        wechatRequest(URL_, textXml(), { aesKey: WECHAT_TEST_AES_KEY, token: 'othertoken' }),
        'signature_mismatch',
      ],
    ]
    for (const [request, reason] of cases) {
      expect(await verifyWeChat(await partsOf(await request), encrypted, WECHAT_ACCOUNT)).toEqual({
        ok: false,
        reason,
      })
    }
    const good = await wechatRequest(URL_, textXml(), { aesKey: WECHAT_TEST_AES_KEY })
    const body = await good.text()
    const flipped = body.replace(
      /<Encrypt><!\[CDATA\[(.)/,
      (_m, c: string) => `<Encrypt><![CDATA[${c === 'A' ? 'B' : 'A'}`,
    )
    const tampered = new Request(good.url, { method: 'POST', body: flipped })
    expect(await verifyWeChat(await partsOf(tampered), encrypted, WECHAT_ACCOUNT)).toEqual({
      ok: false,
      reason: 'signature_mismatch',
    })
    const url = new URL(good.url)
    url.searchParams.delete('msg_signature')
    const unsigned = new Request(url, { method: 'POST', body })
    expect(await verifyWeChat(await partsOf(unsigned), encrypted, WECHAT_ACCOUNT)).toEqual({
      ok: false,
      reason: 'signature_mismatch',
    })
  })

  it('an account without an AES key takes no encrypted push', async () => {
    const parts = await partsOf(
      await wechatRequest(URL_, textXml(), { aesKey: WECHAT_TEST_AES_KEY }),
    )
    expect(await verifyWeChat(parts, plain, WECHAT_ACCOUNT)).toEqual({
      ok: false,
      reason: 'encryption_not_configured',
    })
  })

  it('pads to 32-byte blocks: pads of 17 to 32 bytes decrypt, a pad that lies does not', async () => {
    for (let n = 0; n < 32; n++) {
      const message = 'x'.repeat(n)
      const sealed = await encryptWeChat(message, WECHAT_TEST_AES_KEY, WECHAT_TEST_APP_ID)
      expect(await decryptWeChat(sealed, WECHAT_TEST_AES_KEY, WECHAT_TEST_APP_ID)).toBe(message)
    }
    const key = Buffer.from(`${WECHAT_TEST_AES_KEY}=`, 'base64')
    const seal = (plaintext: Buffer) => {
      const cipher = createCipheriv('aes-256-cbc', key, key.subarray(0, 16)).setAutoPadding(false)
      return Buffer.concat([cipher.update(plaintext), cipher.final()]).toString('base64')
    }
    const framed = (pad: number, lie = false) => {
      const body = Buffer.from('hi')
      const length = Buffer.alloc(4)
      length.writeUInt32BE(body.length)
      const core = Buffer.concat([
        Buffer.alloc(16, 7),
        length,
        body,
        Buffer.from(WECHAT_TEST_APP_ID),
      ])
      const padding = Buffer.alloc(pad, pad)
      if (lie) padding[0] = pad + 1
      return Buffer.concat([core, padding])
    }
    // 40 bytes of frame: WeChat pads with 24 bytes of 24 (AES's own 16-byte PKCS#7 would refuse it).
    expect(await decryptWeChat(seal(framed(24)), WECHAT_TEST_AES_KEY, WECHAT_TEST_APP_ID)).toBe(
      'hi',
    )
    expect(
      await decryptWeChat(seal(framed(24, true)), WECHAT_TEST_AES_KEY, WECHAT_TEST_APP_ID),
    ).toBeNull()
    // Whole 16-byte blocks that are no whole 32-byte block: not WeChat's.
    expect(await decryptWeChat(seal(framed(8)), WECHAT_TEST_AES_KEY, WECHAT_TEST_APP_ID)).toBeNull()
  })
})

describe('WeChat: the GET handshake', () => {
  const handshake = async (
    token: string,
    timestamp = nowSeconds(),
    echostr = '7016201484562382938',
  ) => {
    const nonce = '1514711492'
    const signature = await wechatSignature([token, String(timestamp), nonce])
    return new URLSearchParams({ signature, timestamp: String(timestamp), nonce, echostr })
  }

  it("echoes echostr for the path's account's token", async () => {
    expect(
      await verifyWeChatHandshake(await handshake('oldtoken'), plain, WECHAT_ACCOUNT),
    ).toMatchObject({ ok: true, challenge: '7016201484562382938' })
  })

  it('the official vector verifies as a handshake at its own time', async () => {
    const [, token, timestamp, nonce, signature] = WECHAT_PLAIN_VECTORS[0]
    const vector = config({ WECHAT_TOKENS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${token}` })
    const query = new URLSearchParams({ signature, timestamp, nonce, echostr: 'x1' })
    expect(
      await verifyWeChatHandshake(query, vector, WECHAT_ACCOUNT, {
        nowSeconds: () => Number(timestamp),
      }),
    ).toMatchObject({ ok: true, challenge: 'x1' })
  })

  it("refuses another account's token, an unknown account, a stale timestamp, a long echostr", async () => {
    expect(
      await verifyWeChatHandshake(await handshake('othertoken'), plain, WECHAT_ACCOUNT),
    ).toMatchObject({ ok: false, reason: 'signature_mismatch' })
    expect(
      await verifyWeChatHandshake(await handshake(WECHAT_TEST_TOKEN), plain, 'gh_000000000000'),
    ).toMatchObject({ ok: false, reason: 'unknown_tenant' })
    expect(
      await verifyWeChatHandshake(
        await handshake(WECHAT_TEST_TOKEN, nowSeconds() - 600),
        plain,
        WECHAT_ACCOUNT,
      ),
    ).toMatchObject({ ok: false, reason: 'stale_timestamp' })
    expect(
      await verifyWeChatHandshake(
        await handshake(WECHAT_TEST_TOKEN, nowSeconds(), 'e'.repeat(129)),
        plain,
        WECHAT_ACCOUNT,
      ),
    ).toMatchObject({ ok: false, reason: 'no_echostr' })
  })
})

describe('WeChat XML: hardened parsing', () => {
  it('keeps every value a string: a 64-bit MsgId is exact', () => {
    expect(
      xmlRoot('<xml><MsgId>18446744073709551615</MsgId><CreateTime>1</CreateTime></xml>'),
    ).toEqual({ MsgId: '18446744073709551615', CreateTime: '1' })
  })

  it('never expands entities, and refuses a DOCTYPE', () => {
    expect(xmlRoot('<xml><Content>a &amp; &lt;b&gt;</Content></xml>').Content).toBe(
      'a &amp; &lt;b&gt;',
    )
    const laughs =
      '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><xml><Content>&b;</Content></xml>'
    expect(() => xmlRoot(laughs)).toThrow(InvalidPayloadError)
  })

  it('a text that mentions a DOCTYPE or splits CDATA is the text, as typed', async () => {
    const typed = '<!DOCTYPE html><!ENTITY x "y"> ]]> done'
    const xml = wechatXml(wechatText('1', typed)).replace(']]> done]]>', ']]]]><![CDATA[> done]]>')
    expect(xmlRoot(xml).Content).toBe(typed)
    const sealed = await partsOf(await wechatRequest(URL_, xml, { aesKey: WECHAT_TEST_AES_KEY }))
    expect(await verifyWeChat(sealed, encrypted, WECHAT_ACCOUNT)).toMatchObject({ ok: true })
    expect(parseWeChat(sealed).Content).toBe(typed)
  })

  it('what is read before the signature, by a linear scan: the <Encrypt> of the sample, skipping CDATA', async () => {
    // Tencent's compatible-mode sample: plaintext fields, then <Encrypt>.
    const sample = await tencentSampleRequest().text()
    expect(firstElementText(sample, 'Encrypt')).toBe(TENCENT_SAMPLE.encrypt)
    // A user's text naming an <Encrypt> inside CDATA is text, not the element.
    const typed = `<xml><Content><![CDATA[<Encrypt>AAAA</Encrypt>]]></Content><Encrypt><![CDATA[real]]></Encrypt></xml>`
    expect(firstElementText(typed, 'Encrypt')).toBe('real')
    expect(firstElementText('<xml><Encrypt> plain </Encrypt></xml>', 'Encrypt')).toBe('plain')
    for (const none of ['<xml></xml>', '<xml><Encrypt>open', '<![CDATA[<Encrypt>x</Encrypt>', '']) {
      expect(firstElementText(none, 'Encrypt'), none).toBeNull()
    }
    expect(declaresDoctype('<!doctype x><xml/>')).toBe(true)
    expect(declaresDoctype('<xml><![CDATA[<!DOCTYPE html>]]></xml>')).toBe(false)
    // An unclosed CDATA ends the scan: the rest is CDATA (and no document).
    expect(declaresDoctype(`<xml>${'<![CDATA['.repeat(1000)}<!DOCTYPE x>`)).toBe(false)
  })

  it('refuses what is not one <xml> document', () => {
    for (const body of ['', 'not xml', '<xml><a></xml>', '{"MsgId":1}', '<other/>']) {
      expect(() => xmlRoot(body), body).toThrow(InvalidPayloadError)
    }
  })
})

describe('WeChat: what each push becomes', () => {
  const base = { ToUserName: WECHAT_ACCOUNT, FromUserName: 'oUser', CreateTime: '1700000000' }
  const classify = (fields: Record<string, string>) =>
    classifyWeChat(xmlRoot(wechatXml({ ...base, ...fields })))

  it('media and locations are attachments in the contract shape', async () => {
    expect(
      await classify({
        MsgType: 'image',
        PicUrl: 'https://mmbiz.qpic.cn/x',
        MediaId: 'm1',
        MsgId: '1',
      }),
    ).toMatchObject({
      draft: {
        body: '',
        attachments: [{ kind: 'image', mediaId: 'm1', url: 'https://mmbiz.qpic.cn/x' }],
      },
    })
    expect(
      await classify({
        MsgType: 'voice',
        MediaId: 'm2',
        Format: 'amr',
        Recognition: '你好',
        MsgId: '2',
      }),
    ).toMatchObject({
      draft: {
        attachments: [
          { kind: 'voice', mediaId: 'm2', content: { format: 'amr', recognition: '你好' } },
        ],
      },
    })
    expect(
      await classify({ MsgType: 'shortvideo', MediaId: 'm3', ThumbMediaId: 't3', MsgId: '3' }),
    ).toMatchObject({
      draft: { attachments: [{ kind: 'video', mediaId: 'm3', content: { thumbMediaId: 't3' } }] },
    })
    expect(
      await classify({
        MsgType: 'location',
        Location_X: '23.134521',
        Location_Y: '113.358803',
        Scale: '20',
        Label: '位置信息',
        MsgId: '4',
      }),
    ).toMatchObject({
      draft: {
        attachments: [
          {
            kind: 'location',
            content: {
              latitude: 23.134521,
              longitude: 113.358803,
              scale: '20',
              address: '位置信息',
            },
          },
        ],
      },
    })
    expect(
      await classify({
        MsgType: 'link',
        Title: 'T',
        Description: 'D',
        Url: 'https://e.test/',
        MsgId: '5',
      }),
    ).toMatchObject({
      draft: {
        body: 'T',
        attachments: [{ kind: 'document', url: 'https://e.test/', caption: 'D' }],
      },
    })
  })

  it('events are recorded (never rows) under FromUserName + CreateTime + Event + EventKey', async () => {
    const subscribe = await classify({
      MsgType: 'event',
      Event: 'subscribe',
      EventKey: 'qrscene_1',
    })
    expect(subscribe).toMatchObject({
      action: 'record',
      key: { namespace: 'wechat-event', scope: WECHAT_ACCOUNT },
    })
    const again = await classify({ MsgType: 'event', Event: 'subscribe', EventKey: 'qrscene_1' })
    const click = await classify({ MsgType: 'event', Event: 'CLICK', EventKey: 'qrscene_1' })
    const key = (d: Awaited<ReturnType<typeof classify>>) =>
      d.action === 'record' ? d.key.id : null
    expect(key(again)).toBe(key(subscribe))
    expect(key(click)).not.toBe(key(subscribe))
  })

  it('unknown message types are kept as unrecognized (the reason has no vendor text); a MsgId of any spelling is kept', async () => {
    expect(await classify({ MsgType: 'miniprogrampage', MsgId: '6' })).toEqual({
      action: 'unrecognized',
      reason: 'wechat_type_miniprogrampage',
    })
    expect(await classify({ MsgType: 'x\n{"level":"fatal"}', MsgId: '6' })).toEqual({
      action: 'unrecognized',
      reason: 'wechat_type_other',
    })
    expect(await classify({ MsgType: 'text', Content: 'x' })).toEqual({
      action: 'unrecognized',
      reason: 'wechat_message_without_id',
    })
    expect(await classify({ MsgType: 'text', Content: 'x', MsgId: '1e5' })).toMatchObject({
      action: 'forward',
      draft: { messageKey: `${WECHAT_ACCOUNT}:1e5` },
    })
  })
})

describe('WeChat settings', () => {
  it('needs WECHAT_TOKENS_BY_ACCOUNT; warns about an encrypted account without AppID, never naming a secret', () => {
    const none = parseSettings({
      ORIGIN_URL: 'http://o.test',
      ORIGIN_SHARED_SECRET: 'o',
    } as unknown as Env)
    expect(none.wechat).toEqual({ ok: false, missing: ['WECHAT_TOKENS_BY_ACCOUNT'] })
    const s = parseSettings({
      ORIGIN_URL: 'http://o.test',
      ORIGIN_SHARED_SECRET: 'o',
      WECHAT_TOKENS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=secrettoken1,notanaccount=secrettoken2`,
      WECHAT_AES_KEYS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_AES_KEY}`,
    } as unknown as Env)
    expect(s.wechat.ok).toBe(true)
    const warnings = s.warnings.filter((w) => w.startsWith('WECHAT'))
    expect(warnings).toEqual([
      'WECHAT_TOKENS_BY_ACCOUNT entry 2 is not TENANT=secret1|secret2 with TENANT a gh_ original id; skipped',
      `WECHAT_APP_IDS_BY_ACCOUNT lists no AppID of ${WECHAT_ACCOUNT}: its pushes are refused`,
    ])
    expect(warnings.join()).not.toMatch(/secrettoken|WeChatEncoding/)
  })
})
