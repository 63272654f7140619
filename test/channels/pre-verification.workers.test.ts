/**
 * Before a signature holds, only bounded linear work (docs/design.md, "Before the signature"):
 * inside workerd, every channel is sent the worst forged request of its maximum size
 * (local/crafted-requests.ts: deep JSON, thousands of form parameters, an unclosed `<![CDATA[`
 * repeated, a token naming a held key but signed by another) and must refuse it with no parser
 * having run on it. The measure is deterministic, not a clock (workerd's stands still while code
 * runs; the CPU per channel is `npm run bench`'s phase `pre-verification`): the channel's `parse`
 * and fast-xml-parser are never called, and JSON.parse and URLSearchParams are handed at most
 * twice the body and the token (the pre-reads that pick a tenant's secret, Slack's api_app_id
 * and Twilio's AccountSid, Twilio's signed parameters, a JWT's header and claims): linear work.
 */
import { XMLParser } from 'fast-xml-parser'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import {
  type CraftedTeamsKeys,
  craftedBindings,
  craftedRequests,
  craftedTeamsKeys,
  publishCraftedKeys,
} from '../../local/crafted-requests'
import { randomId } from '../../local/vendor-deliveries'
import { WEBHOOK_CHANNELS } from '../../worker/channels'
import { GATEWAY, type Harness, harness } from '../support/workerd/harness'

/** What ran while one request was answered. */
const seen = { channelParse: 0, xmlParse: 0, parsedChars: 0 }
const reset = () => Object.assign(seen, { channelParse: 0, xmlParse: 0, parsedChars: 0 })

/** The objects whose functions are counted, as writable (the Worker reads them at each call). */
type Parse = (...args: unknown[]) => unknown
const globals = globalThis as unknown as { URLSearchParams: typeof URLSearchParams }
const xmlParser = XMLParser.prototype as unknown as { parse: Parse }
const channels = WEBHOOK_CHANNELS as unknown as Array<{ parse: Parse }>

const realJsonParse = JSON.parse
const RealSearchParams = globals.URLSearchParams
const realXmlParse = xmlParser.parse
const realChannelParses = channels.map((channel) => channel.parse)

beforeAll(() => {
  JSON.parse = function countedParse(text: string, reviver?: Parameters<typeof JSON.parse>[1]) {
    seen.parsedChars += String(text).length
    return realJsonParse(text, reviver)
  }
  globals.URLSearchParams = class CountedSearchParams extends RealSearchParams {
    constructor(init?: ConstructorParameters<typeof URLSearchParams>[0]) {
      if (typeof init === 'string') seen.parsedChars += init.length
      super(init)
    }
  }
  xmlParser.parse = function countedXmlParse(this: unknown, ...args: unknown[]) {
    seen.xmlParse++
    return realXmlParse.apply(this, args)
  }
  for (const channel of channels) {
    const parse = channel.parse
    channel.parse = (...args) => {
      seen.channelParse++
      return parse(...args)
    }
  }
})

afterAll(() => {
  JSON.parse = realJsonParse
  globals.URLSearchParams = RealSearchParams
  xmlParser.parse = realXmlParse
  channels.forEach((channel, i) => {
    channel.parse = realChannelParses[i] ?? channel.parse
  })
})

let keys: CraftedTeamsKeys
let h: Harness

beforeAll(async () => {
  keys = await craftedTeamsKeys()
  const metadata = await publishCraftedKeys(`${inject('keyDocumentsUrl')}/${randomId()}`, keys)
  h = harness(craftedBindings(metadata))
})

describe('before the signature: bounded linear work, no parser', () => {
  // Built once for the names; each test builds its own requests (timestamps are fresh).
  for (const { name } of craftedRequests({} as CraftedTeamsKeys)) {
    it(`${name}: the worst forged request of its maximum size is refused, no parser run on it`, async () => {
      const crafted = craftedRequests(keys).find((c) => c.name === name)
      if (!crafted) throw new Error(name)
      // Once unmeasured: the settings, the Teams keys' first fetch, the JIT.
      await h.deliver(await crafted.smallest(GATEWAY))
      const request = await crafted.worst(GATEWAY)
      const bodyChars = (await request.clone().text()).length
      const tokenChars = request.headers.get('authorization')?.length ?? 0
      reset()
      const response = await h.deliver(request)
      expect([401, 403]).toContain(response.status)
      expect(seen).toMatchObject({ channelParse: 0, xmlParse: 0 })
      expect(seen.parsedChars).toBeLessThanOrEqual(2 * (bodyChars + tokenChars))
      expect((await h.originCalls()).calls).toHaveLength(0)
    })
  }
})
