/**
 * "Ignored" is each channel's list of documented non-message events, and nothing else
 * (worker/unrecognized.ts): per channel, a documented non-message event is still answered with
 * nothing kept, and a message-bearing event of an unfamiliar shape or with a field this code does
 * not know is not lost (a row, or kept as unrecognized). The lists are docs/keys.md's, whole.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  LINE_DESTINATION,
  lineBody,
  lineText,
  messagingBody,
  messagingEvent,
  messagingText,
  metaMid,
  slackMessageEvent,
  TEST_SECRETS,
  teamsActivity,
  telegramUpdate,
  twilioParams,
  WECHAT_ACCOUNT,
  waBatch,
  waText,
  wechatText,
  wechatXml,
} from '../../local/vendor-deliveries'
import { WEBHOOK_CHANNELS } from '../../worker/channels'
import type { Delivery, RequestParts, WebhookChannel } from '../../worker/channels/types'
import { deliveriesOf } from '../../worker/channels/types'
import { placeIgnored } from '../../worker/unrecognized'

const KEYS_MD = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'keys.md'), 'utf8')

const channelNamed = (name: string): WebhookChannel => {
  const found = WEBHOOK_CHANNELS.find((channel) => channel.name === name)
  if (!found) throw new Error(`no channel ${name}`)
  return found
}

/** What the route makes of a body: the channel's parse and classify, then its ignored list. */
async function routed(
  name: string,
  body: string,
  options: { contentType?: string; url?: string; tenant?: string | null } = {},
): Promise<Delivery[]> {
  const channel = channelNamed(name)
  const parts: RequestParts = {
    url: options.url ?? `https://gateway.test/webhooks/${name}`,
    headers: new Headers({ 'content-type': options.contentType ?? 'application/json' }),
    body: { bytes: new TextEncoder().encode(body) as never, text: body },
  }
  const classified = await channel.classify(channel.parse(parts), options.tenant ?? null)
  return [...deliveriesOf(placeIgnored(channel, classified))]
}

const actions = (deliveries: Delivery[]) => deliveries.map((d) => d.action)

/** Per channel: a documented non-message event, and a message-bearing one this code has not seen. */
const CASES: Array<{
  channel: string
  documented: () => Promise<Delivery[]>
  unfamiliar: () => Promise<Delivery[]>
}> = [
  {
    channel: 'slack',
    documented: async () =>
      routed(
        'slack',
        JSON.stringify({
          ...slackMessageEvent(),
          event: { type: 'reaction_added', user: 'U1', reaction: 'x' },
        }),
      ),
    // A message subtype Slack may add, with the person's text.
    unfamiliar: async () => {
      const payload = slackMessageEvent({ text: 'hi' })
      Object.assign(payload.event as object, { subtype: 'voice_note_transcript' })
      return routed('slack', JSON.stringify(payload))
    },
  },
  {
    channel: 'telegram',
    documented: async () =>
      routed(
        'telegram',
        JSON.stringify({ update_id: 1, poll_answer: { poll_id: '1', option_ids: [0] } }),
        {
          tenant: TEST_SECRETS.telegramBotId,
        },
      ),
    unfamiliar: async () => {
      const update = telegramUpdate({ updateId: 2 })
      const message = update.message as Record<string, unknown>
      delete message.text
      message.checklist = { title: 'Groceries', tasks: [{ id: 1, text: 'milk' }] }
      return routed('telegram', JSON.stringify(update), { tenant: TEST_SECRETS.telegramBotId })
    },
  },
  {
    channel: 'twilio',
    // Twilio has none: every callback is a row or recorded (a status).
    documented: async () => [],
    unfamiliar: async () => {
      const params = twilioParams({ body: '' }).filter(([name]) => name !== 'NumMedia')
      return routed(
        'twilio',
        new URLSearchParams([...params, ['NewContentType', 'x']]).toString(),
        {
          contentType: 'application/x-www-form-urlencoded',
        },
      )
    },
  },
  {
    channel: 'whatsapp-cloud',
    documented: async () =>
      routed(
        'whatsapp-cloud',
        JSON.stringify(
          waBatch([
            {
              phoneNumberId: '1001',
              messages: [
                { ...waText('wamid.R1', ''), type: 'reaction', reaction: { emoji: '👍' } },
              ],
            },
          ]),
        ),
      ),
    unfamiliar: async () =>
      routed(
        'whatsapp-cloud',
        JSON.stringify(
          waBatch([
            {
              phoneNumberId: '1001',
              messages: [
                { ...waText('wamid.N1', ''), type: 'poll_vote', poll_vote: { option: 'A' } },
              ],
            },
          ]),
        ),
      ),
  },
  {
    channel: 'line',
    documented: async () =>
      routed(
        'line',
        JSON.stringify(lineBody([{ ...lineText('1', 'x'), type: 'follow', message: undefined }])),
      ),
    unfamiliar: async () =>
      routed(
        'line',
        JSON.stringify(
          lineBody([
            { ...lineText('2', 'x'), message: { id: '2', type: 'voiceNote', text: 'hi' } },
          ]),
        ),
      ),
  },
  {
    channel: 'messenger',
    documented: async () =>
      routed(
        'messenger',
        JSON.stringify(
          messagingBody('page', [{ messaging: [messagingEvent({ optin: { ref: 'r' } })] }]),
        ),
      ),
    unfamiliar: async () =>
      routed(
        'messenger',
        JSON.stringify(
          messagingBody('page', [
            { messaging: [messagingEvent({ message: { mid: metaMid(), poll: { q: 'x' } } })] },
          ]),
        ),
      ),
  },
  {
    channel: 'instagram',
    documented: async () =>
      routed(
        'instagram',
        JSON.stringify(
          messagingBody('instagram', [{ messaging: [messagingEvent({ referral: { ref: 'r' } })] }]),
        ),
      ),
    unfamiliar: async () =>
      routed(
        'instagram',
        JSON.stringify(
          messagingBody('instagram', [
            {
              messaging: [
                messagingText(metaMid(), 'hi'),
                messagingEvent({ message_v3: { text: 'hi' } }),
              ],
            },
          ]),
        ),
      ),
  },
  {
    channel: 'wechat',
    // WeChat has none: every message is a row, every event recorded.
    documented: async () => [],
    unfamiliar: async () =>
      routed(
        'wechat',
        wechatXml({ ...wechatText('9', ''), MsgType: 'file', Title: 'report.pdf' }),
        {
          contentType: 'text/xml',
          tenant: WECHAT_ACCOUNT,
        },
      ),
  },
  {
    channel: 'teams',
    documented: async () =>
      routed('teams', JSON.stringify(teamsActivity({ type: 'typing' })), {
        tenant: '8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a',
      }),
    unfamiliar: async () =>
      routed(
        'teams',
        JSON.stringify(teamsActivity({ type: 'messageUpdate', eventType: 'pinMessage' })),
        {
          tenant: '8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a',
        },
      ),
  },
]

describe('per channel: documented non-message events answered, unfamiliar ones kept', () => {
  it('covers every webhook channel', () => {
    expect(CASES.map((c) => c.channel).sort()).toEqual(WEBHOOK_CHANNELS.map((c) => c.name).sort())
  })

  it.each(CASES)('$channel', async ({ documented, unfamiliar }) => {
    for (const delivery of await documented()) expect(delivery.action).toBe('ignore')
    const kept = await unfamiliar()
    expect(kept.length).toBeGreaterThan(0)
    // Not one is answered "ignored": each is a row, or kept as unrecognized.
    for (const action of actions(kept)) expect(['forward', 'unrecognized']).toContain(action)
    expect(actions(kept)).toContain('unrecognized')
  })
})

describe('placeIgnored', () => {
  const line = channelNamed('line')

  it('an ignore with a reason not on the channel list is unrecognized; one on it stays ignored', () => {
    expect(placeIgnored(line, { action: 'ignore', reason: 'line_type_follow' })).toEqual({
      action: 'ignore',
      reason: 'line_type_follow',
    })
    expect(placeIgnored(line, { action: 'ignore', reason: 'line_type_somethingNew' })).toEqual({
      action: 'unrecognized',
      reason: 'line_type_somethingNew',
    })
  })

  it('a new message with no text and no attachment is no row, kept as unrecognized', () => {
    const key = { namespace: 'line', scope: LINE_DESTINATION, id: 'e' }
    const draft = {
      kind: 'message' as const,
      channel: 'line',
      tenant: LINE_DESTINATION,
      deliveryKey: 'dedup:line:x:e',
      messageKey: `${LINE_DESTINATION}:1`,
      sender: { externalId: 'U1' },
      body: '  ',
      occurredAt: new Date(0).toISOString(),
    }
    expect(placeIgnored(line, [{ action: 'forward', key, draft }])).toEqual([
      { action: 'unrecognized', reason: 'line_empty_message' },
    ])
  })
})

describe('the lists are docs/keys.md’s, whole', () => {
  it.each(WEBHOOK_CHANNELS.map((channel) => [channel.name, channel] as const))(
    '%s',
    (name, channel) => {
      const line = KEYS_MD.split('\n').find((l) => l.startsWith(`- **${name}**: `))
      expect(line, `docs/keys.md lists ${name}'s ignored events`).toBeDefined()
      const listed = [...(line ?? '').matchAll(/`([a-z0-9_]+(?:_[A-Za-z0-9]+)*)`/g)].map(
        (m) => m[1],
      )
      const codes = Object.keys(channel.ignored)
      expect(listed.sort()).toEqual(codes.length > 0 ? [...codes].sort() : [])
    },
  )
})
