/**
 * The handshakes on a connection's route: WeChat's GET `echostr` check under that connection's
 * Token only, Meta's GET `hub.challenge` (the verify token stays the Worker's variable), and
 * Slack's url_verification POST under that connection's signing secret only; a disabled
 * connection's handshake is refused.
 */
import { describe, expect, it } from 'vitest'
import { nowSeconds, slackRequest } from '../../local/vendor-deliveries'
import { wechatSignature } from '../../worker/channels/wechat-crypto'
import { edgeHarness, putConnection, routeOf } from './support/edge'

const ECHO = '7016201484562382938'

async function wechatCheck(url: string, token: string): Promise<Request> {
  const timestamp = String(nowSeconds())
  const nonce = String(Math.floor(Math.random() * 2 ** 31))
  const signature = await wechatSignature([token, timestamp, nonce])
  return new Request(
    `${url}?${new URLSearchParams({ signature, timestamp, nonce, echostr: ECHO })}`,
  )
}

describe('WeChat: the console check on a connection route', () => {
  it("answers for the connection's Token, not another's, not when disabled", async () => {
    const h = edgeHarness()
    const put = (account: string, token: string, status: 'active' | 'disabled' = 'active') =>
      putConnection({
        channel: 'wechat',
        account,
        status,
        secrets: [{ field: 'token', value: token }],
      })
    const a = await put('gh_aaaaaaaaaaa1', 'tokenA1')
    const b = await put('gh_bbbbbbbbbbb1', 'tokenB1')
    const off = await put('gh_ccccccccccc1', 'tokenC1', 'disabled')
    const ok = await h.deliver(await wechatCheck(routeOf('wechat', a.id), 'tokenA1'))
    expect(ok.status).toBe(200)
    expect(await ok.text()).toBe(ECHO)
    expect((await h.deliver(await wechatCheck(routeOf('wechat', b.id), 'tokenA1'))).status).toBe(
      403,
    )
    expect((await h.deliver(await wechatCheck(routeOf('wechat', off.id), 'tokenC1'))).status).toBe(
      403,
    )
  })
})

describe('Meta: the subscription handshake on a connection route', () => {
  it("echoes hub.challenge for the Worker's verify token", async () => {
    const h = edgeHarness({ WHATSAPP_VERIFY_TOKEN: 'wa-verify' })
    const record = await putConnection({
      channel: 'whatsapp-cloud',
      account: '1234567',
      ids: ['7654321'],
      secrets: [{ field: 'app_secret', value: 'app-secret-1' }],
    })
    const url = (token: string) =>
      `${routeOf('whatsapp-cloud', record.id)}?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=${token}`
    const ok = await h.deliver(new Request(url('wa-verify')))
    expect(ok.status).toBe(200)
    expect(await ok.text()).toBe('1158201444')
    expect((await h.deliver(new Request(url('wrong')))).status).toBe(403)
  })
})

describe('Slack: url_verification on a connection route', () => {
  it("answers for the connection's signing secret only", async () => {
    const h = edgeHarness()
    const record = await putConnection({
      channel: 'slack',
      account: 'A0HANDSHAKE',
      ids: ['T0HANDSHAKE'],
      secrets: [{ field: 'signing_secret', value: 'slack-conn-secret' }],
    })
    const payload = { token: 'x', challenge: 'chal-123', type: 'url_verification' }
    const url = routeOf('slack', record.id)
    const ok = await h.deliver(await slackRequest(url, payload, { secret: 'slack-conn-secret' }))
    expect(ok.status).toBe(200)
    expect(await ok.text()).toBe('chal-123')
    // The Worker's own SLACK_SIGNING_SECRET (the test bindings set one) vouches for nothing here.
    const shared = await h.deliver(await slackRequest(url, payload))
    expect(shared.status).toBe(401)
  })
})
