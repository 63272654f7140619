/**
 * The Teams channel's parts in Node: what an activity becomes (keys, kinds, attachments), the
 * signing-key cache against a local metadata + JWKS server with an injected clock (daily refresh,
 * a refetch for an unknown key at most every 5 minutes, old keys kept when Microsoft is down, for
 * a bounded stale window and fetched again only after a backoff, bounded and redirect-free
 * fetches), and the token check's clock skew.
 */
import { createServer } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type KeyDocumentServer, startKeyDocuments } from '../../../local/key-documents'
import {
  TEAMS_CONVERSATION_TAG as C,
  partsOf,
  randomId,
  TEAMS_APP,
  teamsActivity,
  teamsKeyDocuments,
  teamsRequest,
  teamsSigner,
  teamsToken,
} from '../../../local/vendor-deliveries'
import { classifyTeams, teamsAttachments } from '../../../worker/channels/teams'
import {
  BotKeyCache,
  BotKeysUnavailableError,
  KEYS_MAX_BYTES,
  KEYS_REFRESH_MS,
  KEYS_RETRY,
  KEYS_STALE_MS,
  UNKNOWN_KID_REFETCH_MS,
} from '../../../worker/channels/teams-keys'
import { verifyTeams } from '../../../worker/channels/teams-verify'
import { ForbiddenError } from '../../../worker/errors'

let server: KeyDocumentServer
beforeAll(async () => {
  server = await startKeyDocuments()
})
afterAll(() => server?.close())

const put = (path: string, value: unknown) =>
  fetch(`${server.url}${path}`, { method: 'PUT', body: JSON.stringify(value) })
const hits = async (path: string) => (await fetch(`${server.url}/hits${path}`)).json()
/** Makes a document fail: `hang` (never answered), an HTTP status, or `off`. */
const fail = (path: string, mode: 'hang' | '500' | 'off') =>
  fetch(`${server.url}/fail${path}`, { method: 'PUT', body: mode })

/** A metadata + JWKS of its own on the server, and a cache on it with a clock the test moves. */
async function keySite(signers: Awaited<ReturnType<typeof teamsSigner>>[]) {
  const base = `/${randomId()}`
  const documents = teamsKeyDocuments(`${server.url}${base}/keys`, signers)
  await put(`${base}/openid`, documents.metadata)
  await put(`${base}/keys`, documents.jwks)
  let now = 1_000_000
  const cache = new BotKeyCache(`${server.url}${base}/openid`, () => now)
  return {
    base,
    cache,
    advance: (ms: number) => {
      now += ms
    },
    publish: (list: typeof signers) => put(`${base}/keys`, teamsKeyDocuments('', list).jwks),
  }
}

/**
 * Microsoft's own examples: MicrosoftDocs/msteams-docs
 * msteams-platform/bots/how-to/conversations/conversation-messages.md @
 * bbf096a63707fddbf443b2b735aaccdc20e35f48 ("Update message": the undelete and soft delete
 * activities, as published) and msteams-platform/task-modules-and-cards/cards/cards-actions.md @
 * 624b9a1f3eb87f755975bc572a48f1eb8722135f (the inbound activity of a card action: its `value`;
 * an Action.Submit without a messageBack has no `text`).
 */
describe("Microsoft's Teams examples", () => {
  const person = {
    id: '29:1BLjP9j3_TM4mubmQZsYEo7jDyLeLf_YVA9sVPVO7KMAFMjJWB_EUGveb9EVDh9LgoNp9qjnzEBy4kgw83Jf1Kg',
    name: 'Alex Wilber',
    aadObjectId: '976e4d1e-2108-43ee-a092-46a9507c5606',
  }
  const conversation = {
    conversationType: 'personal',
    tenantId: '528dbe3f-15e0-4e37-84a1-00cc305847dd',
    id: 'a:1tewuGJ44RkB90tiJNQ_I4q8vyuN5CYA_f-v6f0Vd-Bs3Ce85C73Ah1y8TvyjESsTHWjjgw-gnsuIuCUOWkfOCq6qaUYsk2_-fj93XXXHUMAUzhFFvTnaCU7V4WiMqXQL',
  }
  const docsActivity = (type: string, timestamp: string, eventType: string) => ({
    type,
    timestamp,
    localTimestamp: '2022-10-28T10:19:39.4615413-07:00',
    id: '1666977568748',
    channelId: 'msteams',
    serviceUrl: 'https://canary.botapi.skype.com/amer/',
    from: person,
    conversation,
    recipient: { id: '28:0d469698-ab9d-479a-b0d8-758b6e6b1234', name: 'Testbot' },
    entities: [
      {
        locale: 'en-US',
        country: 'US',
        platform: 'Web',
        timezone: 'America/Los_Angeles',
        type: 'clientInfo',
      },
    ],
    channelData: { eventType, tenant: { id: '528dbe3f-15e0-4e37-84a1-00cc305847dd' } },
    locale: 'en-US',
    localTimezone: 'America/Los_Angeles',
  })

  it('undeleteMessage restores the message it names: kind undelete, under its message key', async () => {
    const undelete = docsActivity(
      'messageUpdate',
      '2022-10-28T17:19:39.4615413Z',
      'undeleteMessage',
    )
    const del = docsActivity('messageDelete', '2022-10-28T17:19:43.1612052Z', 'softDeleteMessage')
    const restored = await classifyTeams(undelete, TEAMS_APP)
    const deleted = await classifyTeams(del, TEAMS_APP)
    expect(restored).toMatchObject({
      action: 'forward',
      draft: { kind: 'undelete', body: '', occurredAt: '2022-10-28T17:19:39.461Z' },
    })
    expect(deleted).toMatchObject({ action: 'forward', draft: { kind: 'delete' } })
    const keyOf = (d: typeof restored) => (d.action === 'forward' ? d.draft : null)
    expect(keyOf(restored)?.messageKey).toBe(keyOf(deleted)?.messageKey)
    expect(keyOf(restored)?.deliveryKey).toMatch(/:1666977568748:undelete:[0-9a-f]{16}$/)
  })

  it('an Adaptive Card Action.Submit (value, no text) is a button press: a row of the card data', async () => {
    const submit = {
      value: { property: 'propertyValue' },
      type: 'message',
      timestamp: '2017-06-22T22:38:47.407Z',
      id: 'f:5261769396935243054',
      channelId: 'msteams',
      serviceUrl: 'https://smba.trafficmanager.net/amer-client-ss.msg/',
      from: { id: '29:102jd210jd010icsoaeclaejcoa9ue09u', name: 'John Smith' },
      conversation: { id: '19:malejcou081i20ojmlcau0@thread.skype;messageid=1498171086622' },
      recipient: { id: '28:76096e45-119f-4736-859c-6dfff54395f7', name: 'MyBot' },
      channelData: {
        channel: { id: '19:malejcou081i20ojmlcau0@thread.skype' },
        team: { id: '19:12d021jdoijsaeoaue0u@thread.skype' },
        tenant: { id: 'bec8e231-67ad-484e-87f4-3e5438390a77' },
      },
      replyToId: '1575667808184',
    }
    const press = await classifyTeams(submit, TEAMS_APP)
    expect(press).toMatchObject({
      action: 'forward',
      draft: {
        kind: 'message',
        body: '{"property":"propertyValue"}',
        messageKey: expect.stringMatching(/:f:5261769396935243054$/),
        deliveryKey: expect.stringMatching(/:f%3A5261769396935243054$/),
      },
    })
    // The same with nothing at all: no row, kept as unrecognized.
    const { value: _v, ...empty } = submit
    expect(await classifyTeams(empty, TEAMS_APP)).toEqual({
      action: 'unrecognized',
      reason: 'teams_message_empty',
    })
  })
})

describe('classifyTeams', () => {
  it('a message: delivery key {app}:{channelId}:{conversation tag}:{id}, message key the same, sender and time', async () => {
    const activity = teamsActivity({
      id: '1700000000123',
      text: 'hi',
      timestamp: '2026-01-02T03:04:05.6789012Z',
    })
    expect(await classifyTeams(activity, TEAMS_APP)).toEqual({
      action: 'forward',
      key: { namespace: 'teams', scope: TEAMS_APP, id: `msteams:${C}:1700000000123` },
      draft: {
        kind: 'message',
        channel: 'teams',
        tenant: TEAMS_APP,
        deliveryKey: `dedup:teams:${TEAMS_APP}:msteams:${C}:1700000000123`,
        messageKey: `${TEAMS_APP}:msteams:${C}:1700000000123`,
        sender: { externalId: '29:1AbCdEfGhIjKlMnOp', displayName: 'Ada Lovelace' },
        body: 'hi',
        occurredAt: '2026-01-02T03:04:05.678Z',
      },
    })
  })

  it('the conversation tag: 16 hex of SHA-256 of conversation.id without ;messageid=', async () => {
    expect(C).toBe('cd0253d5e7495731c')
    const thread = await classifyTeams(
      teamsActivity({ id: '1', conversation: 'a:1XyZpersonalchat;messageid=99' }),
      TEAMS_APP,
    )
    expect(thread.action === 'forward' && thread.draft.messageKey).toBe(
      `${TEAMS_APP}:msteams:${C}:1`,
    )
  })

  it('edit and delete: the message key of the message they name, their own delivery keys', async () => {
    const id = '1700000000555'
    const edit = await classifyTeams(
      teamsActivity({ id, type: 'messageUpdate', eventType: 'editMessage', text: 'v2' }),
      TEAMS_APP,
    )
    const del = await classifyTeams(
      teamsActivity({ id, type: 'messageDelete', eventType: 'softDeleteMessage' }),
      TEAMS_APP,
    )
    expect(edit).toMatchObject({
      action: 'forward',
      draft: { kind: 'edit', body: 'v2', messageKey: `${TEAMS_APP}:msteams:${C}:${id}` },
    })
    expect(del).toMatchObject({
      action: 'forward',
      draft: { kind: 'delete', body: '', messageKey: `${TEAMS_APP}:msteams:${C}:${id}` },
    })
    expect(edit.action === 'forward' && edit.key.id).toMatch(
      new RegExp(`^msteams:${C}:1700000000555:edit:[0-9a-f]{16}$`),
    )
    expect(del.action === 'forward' && del.key.id).toMatch(
      new RegExp(`^msteams:${C}:${id}:delete:[0-9a-f]{16}$`),
    )
  })

  it('conversationUpdate, typing, an invoke: documented non-message activities, answered with nothing kept', async () => {
    for (const type of ['conversationUpdate', 'typing', 'messageReaction', 'installationUpdate']) {
      expect(await classifyTeams(teamsActivity({ type }), TEAMS_APP)).toEqual({
        action: 'ignore',
        reason: `teams_type_${type}`,
      })
    }
    for (const [name, reason] of [
      ['signin/verifyState', 'teams_invoke_signin_verifyState'],
      ['task/fetch', 'teams_invoke_task_fetch'],
      ['composeExtension/query', 'teams_invoke_composeExtension_query'],
    ]) {
      const invoke = { ...teamsActivity({ type: 'invoke' }), name, value: { state: '123456' } }
      expect(await classifyTeams(invoke, TEAMS_APP)).toEqual({ action: 'ignore', reason })
    }
  })

  // The invoke names as botbuilder-js dispatches them (microsoft/botbuilder-js,
  // libraries/botbuilder/src/teamsActivityHandler.ts): these carry what someone entered.
  it.each([
    ['task/submit', { data: { comment: 'please call me back' } }, 'teams_invoke_task_submit'],
    [
      'composeExtension/submitAction',
      { commandId: 'createTicket', data: { title: 'Refund' } },
      'teams_invoke_composeExtension_submitAction',
    ],
    ['message/submitAction', { actionName: 'feedback' }, 'teams_invoke_message_submitAction'],
    ['meeting/newThing', { text: 'hi' }, 'teams_invoke_meeting_newThing'],
    [undefined, { text: 'hi' }, 'teams_invoke_other'],
  ])(
    'an invoke %s carries content: kept as unrecognized (%s), never ignored',
    async (name, value, reason) => {
      const invoke = { ...teamsActivity({ type: 'invoke' }), name, value }
      expect(await classifyTeams(invoke, TEAMS_APP)).toEqual({ action: 'unrecognized', reason })
    },
  )

  // Microsoft's Universal Action invoke (Action.Execute), as "Work with Universal Actions for
  // Adaptive Cards" shows it (learn.microsoft.com/microsoftteams/platform/task-modules-and-cards/
  // cards/universal-actions-for-adaptive-cards/work-with-universal-actions-for-adaptive-cards).
  it('a Universal Action (invoke adaptiveCard/action) is a button press: a row of its title, or its data', async () => {
    const execute = (action: Record<string, unknown>) => ({
      ...teamsActivity({ type: 'invoke', id: 'f:2000000000000000001' }),
      name: 'adaptiveCard/action',
      text: undefined,
      value: { action: { type: 'Action.Execute', ...action }, trigger: 'manual' },
    })
    const titled = execute({ title: 'Approve', verb: 'approveRequest', data: { id: 42 } })
    expect(await classifyTeams(titled, TEAMS_APP)).toMatchObject({
      action: 'forward',
      draft: { kind: 'message', body: 'Approve' },
    })
    const untitled = execute({ verb: 'approveRequest', data: { id: 42 } })
    expect(await classifyTeams(untitled, TEAMS_APP)).toMatchObject({
      action: 'forward',
      draft: { kind: 'message', body: '{"id":42}' },
    })
  })

  it.each([
    [
      'an edit without an id',
      { type: 'messageUpdate', eventType: 'editMessage', id: null },
      'teams_messageUpdate_without_id',
    ],
    ['no channelId', { channelId: '' }, 'teams_without_channel_id'],
    [
      'a messageUpdate of an unknown eventType',
      { type: 'messageUpdate', eventType: 'pinMessage' },
      'teams_messageUpdate_pinMessage',
    ],
    ['an unknown activity type', { type: 'meetingNote' }, 'teams_type_meetingNote'],
  ] as const)('%s is kept as unrecognized, never dropped', async (_name, fields, reason) => {
    expect(await classifyTeams(teamsActivity(fields), TEAMS_APP)).toEqual({
      action: 'unrecognized',
      reason,
    })
  })

  it('a message without an id: a fallback key, a hash of conversation, sender, time and text', async () => {
    const fields = { id: null, text: 'x', timestamp: '2026-01-02T03:04:05Z' }
    const one = await classifyTeams(teamsActivity(fields), TEAMS_APP)
    const same = await classifyTeams(teamsActivity(fields), TEAMS_APP)
    const other = await classifyTeams(teamsActivity({ ...fields, text: 'y' }), TEAMS_APP)
    expect(one).toMatchObject({
      key: {
        fallback: true,
        id: expect.stringMatching(new RegExp(`^msteams:${C}:h[0-9a-f]{32}$`)),
      },
    })
    expect(same).toEqual(one)
    expect(other.action === 'forward' && other.key.id).not.toBe(
      one.action === 'forward' && one.key.id,
    )
  })

  it('attachments: a file download, an image, a card; the HTML rendering of the text is none', () => {
    const card = { type: 'AdaptiveCard', body: [{ type: 'TextBlock', text: 'hi' }] }
    expect(
      teamsAttachments(
        teamsActivity({
          attachments: [
            { contentType: 'text/html', content: '<p>hi</p>' },
            { contentType: 'application/vnd.microsoft.card.adaptive', content: card },
            { contentType: 'video/mp4', contentUrl: 'https://x.example/v.mp4', name: 'v.mp4' },
            'not an object',
          ],
        }),
      ),
    ).toEqual([
      { kind: 'document', mimeType: 'application/vnd.microsoft.card.adaptive', content: card },
      { kind: 'video', mimeType: 'video/mp4', url: 'https://x.example/v.mp4', fileName: 'v.mp4' },
    ])
  })
})

/** Keys fetched and held, then Microsoft stops answering (each fetch hangs) as they come due. */
async function keysHeldThenHanging() {
  const signer = await teamsSigner()
  const site = await keySite([signer])
  const openid = `${site.base}/openid`
  expect(await site.cache.key(signer.kid)).toBeDefined()
  await fail(openid, 'hang')
  site.advance(KEYS_REFRESH_MS)
  return { signer, site, openid }
}

describe('BotKeyCache', () => {
  it('fetches metadata and keys once, then again only after a day', async () => {
    const signer = await teamsSigner()
    const site = await keySite([signer])
    expect((await site.cache.key(signer.kid))?.endorsements).toEqual(new Set(['msteams']))
    await site.cache.key(signer.kid)
    site.advance(KEYS_REFRESH_MS - 1)
    await site.cache.key(signer.kid)
    expect(await hits(`${site.base}/keys`)).toBe(1)
    site.advance(1)
    await site.cache.key(signer.kid)
    expect(await hits(`${site.base}/keys`)).toBe(2)
  })

  it('an unknown kid is fetched again, at most once every 5 minutes; a rotated-in key is found', async () => {
    const [old, rotated] = [await teamsSigner(), await teamsSigner()]
    const site = await keySite([old])
    expect(await site.cache.key(old.kid)).toBeDefined()
    await site.publish([old, rotated])
    // Within 5 minutes of the last fetch, forged kids cost no fetch.
    for (let i = 0; i < 10; i++) expect(await site.cache.key(`forged-${i}`)).toBeUndefined()
    expect(await site.cache.key(rotated.kid)).toBeUndefined()
    expect(await hits(`${site.base}/keys`)).toBe(1)
    site.advance(UNKNOWN_KID_REFETCH_MS)
    expect(await site.cache.key(rotated.kid)).toBeDefined()
    expect(await hits(`${site.base}/keys`)).toBe(2)
  })

  it('a failed refresh keeps the keys it had; with none at all it throws', async () => {
    const signer = await teamsSigner()
    const site = await keySite([signer])
    await site.cache.key(signer.kid)
    await put(`${site.base}/openid`, { issuer: 'x' })
    site.advance(KEYS_REFRESH_MS)
    expect(await site.cache.key(signer.kid)).toBeDefined()
    const empty = new BotKeyCache(`${server.url}/${randomId()}/openid`)
    await expect(empty.key(signer.kid)).rejects.toBeInstanceOf(BotKeysUnavailableError)
  })

  it('Microsoft stops answering: one request waits for the timeout, the rest of the backoff verify with the held keys and fetch nothing; past the stale window 503 at once', async () => {
    const { signer, site, openid } = await keysHeldThenHanging()
    // The refresh is due: this request waits for the fetch's timeout, then has the held key.
    expect(await site.cache.key(signer.kid)).toBeDefined()
    expect(await hits(openid)).toBe(2)
    // Within the backoff (at least half its base), no request fetches: not the held key's, not a
    // forged kid's.
    site.advance(KEYS_RETRY.baseMs / 2 - 1)
    for (let i = 0; i < 5; i++) expect(await site.cache.key(signer.kid)).toBeDefined()
    expect(await site.cache.key('forged')).toBeUndefined()
    expect(await hits(openid)).toBe(2)
    // After it, one fetch again (failing at once now), and the backoff grows.
    await fail(openid, '500')
    site.advance(KEYS_RETRY.baseMs)
    expect(await site.cache.key(signer.kid)).toBeDefined()
    expect(await hits(openid)).toBe(3)
    // Past the stale window the held keys no longer verify: 503 at once, no fetch in the backoff.
    site.advance(KEYS_STALE_MS)
    await expect(site.cache.key(signer.kid)).rejects.toBeInstanceOf(BotKeysUnavailableError)
    expect(await hits(openid)).toBe(4)
    await expect(site.cache.key(signer.kid)).rejects.toThrow(/answered 500/)
    expect(await hits(openid)).toBe(4)
    // Microsoft back: the next fetch after the backoff has the keys.
    await fail(openid, 'off')
    site.advance(KEYS_RETRY.maxMs)
    expect(await site.cache.key(signer.kid)).toBeDefined()
    expect(await hits(openid)).toBe(5)
  })

  it("a request while another's refresh is under way verifies with the held keys, never waiting on that fetch (workerd binds it to its request)", async () => {
    const { signer, site, openid } = await keysHeldThenHanging()
    let firstSettled = false
    // Its fetch hangs until the fetch's timeout.
    const first = site.cache.key(signer.kid).finally(() => {
      firstSettled = true
    })
    expect(await site.cache.key(signer.kid)).toBeDefined()
    expect(firstSettled).toBe(false)
    expect(await first).toBeDefined()
    // One fetch in all: the first request's.
    expect(await hits(openid)).toBe(2)
  })

  it('with no keys held yet, requests at once each fetch for themselves, and each verifies', async () => {
    const signer = await teamsSigner()
    const site = await keySite([signer])
    const found = await Promise.all([1, 2, 3].map(() => site.cache.key(signer.kid)))
    expect(found.every((key) => key !== undefined)).toBe(true)
    expect(await hits(`${site.base}/keys`)).toBe(3)
  })

  it('refuses a redirect and a document over its bound', async () => {
    const redirecting = createServer((req, res) => {
      if (req.url === '/big') res.end(JSON.stringify({ jwks_uri: 'x'.repeat(KEYS_MAX_BYTES) }))
      else res.writeHead(302, { location: `${server.url}/anything` }).end()
    })
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve))
    const address = redirecting.address()
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
    try {
      await expect(new BotKeyCache(`${base}/openid`).key('k')).rejects.toThrow(/answered 302/)
      await expect(new BotKeyCache(`${base}/big`).key('k')).rejects.toBeInstanceOf(
        BotKeysUnavailableError,
      )
    } finally {
      await new Promise<void>((resolve) => redirecting.close(() => resolve()))
    }
  })
})

describe('verifyTeams', () => {
  async function verify(expiresIn: number) {
    const signer = await teamsSigner()
    const site = await keySite([signer])
    const token = await teamsToken(signer, { expiresIn })
    const parts = await partsOf(
      teamsRequest('https://gw.test/webhooks/teams', teamsActivity(), token),
    )
    return verifyTeams(parts, { appIds: [TEAMS_APP], keys: site.cache })
  }

  it('accepts a token expired within the 5 minute skew, naming its bot as the tenant', async () => {
    expect(await verify(-200)).toEqual({ ok: true, tenant: TEAMS_APP })
  })

  it('refuses one expired past it with a 403', async () => {
    await expect(verify(-400)).rejects.toBeInstanceOf(ForbiddenError)
  })
})
