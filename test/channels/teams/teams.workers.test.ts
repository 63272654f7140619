/**
 * The Microsoft Teams channel through the real Worker routes, inside workerd, with real Redis (the
 * Upstash stand-in), the test origin, and Bot Framework tokens minted with `jose` by keys the
 * test generates, served as OpenID metadata + JWKS (with endorsements) by a local stand-in for
 * login.botframework.com: Microsoft publishes no test vector. Every refusal is a 403 that writes
 * nothing; replays, concurrent copies, edits and deletes, activities without an id, the largest
 * body, and two bots each writing only under its own app id.
 */
import { describe, expect, inject, it } from 'vitest'
import {
  TEAMS_CONVERSATION_TAG as C,
  randomId,
  TEAMS_APP,
  TEAMS_OTHER_APP,
  type TeamsSigner,
  type TeamsTokenClaims,
  teamsActivity,
  teamsKeyDocuments,
  teamsRequest,
  teamsSigner,
  teamsToken,
} from '../../../local/vendor-deliveries'
import type { Env } from '../../../worker/env'
import type { SpoolMessage } from '../../../worker/spool/message'
import { DONE_VALUE, SPOOLED_VALUE } from '../../support/claim-values'
import { GATEWAY, type Harness, harness } from '../../support/workerd/harness'
import { nothingWritten } from '../support/workerd'

const URL_ = `${GATEWAY}/webhooks/teams`

interface Bot {
  h: Harness
  signer: TeamsSigner
  token(claims?: TeamsTokenClaims, signer?: TeamsSigner): Promise<string>
  post(activity: Record<string, unknown> | string, token?: string | null): Promise<Response>
}

/**
 * A gateway serving TEAMS_APP and TEAMS_OTHER_APP whose metadata URL is this test's own (the
 * keys are cached per isolate and per URL), listing `signers` (default: one, endorsing msteams).
 */
async function bot(extra: TeamsSigner[] = [], env: Partial<Env> = {}): Promise<Bot> {
  const signer = await teamsSigner()
  const base = `${inject('keyDocumentsUrl')}/${randomId()}`
  const documents = teamsKeyDocuments(`${base}/keys`, [signer, ...extra])
  await fetch(`${base}/openid`, { method: 'PUT', body: JSON.stringify(documents.metadata) })
  await fetch(`${base}/keys`, { method: 'PUT', body: JSON.stringify(documents.jwks) })
  const h = harness({
    TEAMS_APP_IDS: `${TEAMS_APP}, ${TEAMS_OTHER_APP}`,
    TEAMS_OPENID_METADATA_URL: `${base}/openid`,
    ...env,
  })
  const token = (claims: TeamsTokenClaims = {}, by = signer) => teamsToken(by, claims)
  return {
    h,
    signer,
    token,
    async post(activity, bearer) {
      const auth = bearer === undefined ? await token() : bearer
      return h.deliver(teamsRequest(URL_, activity, auth))
    },
  }
}

describe('Teams: a message activity', () => {
  it('is one row under {app}:{channelId}:{conversation}:{id}; a resend is a duplicate', async () => {
    const b = await bot()
    const activity = teamsActivity({ id: '1700000000123', text: 'hi there' })
    const first = await b.post(activity)
    expect(first.status).toBe(200)
    expect(first.headers.get('x-dedup-decision')).toBe('forwarded')
    const deliveryKey = `dedup:teams:${TEAMS_APP}:msteams:${C}:1700000000123`
    expect(await b.h.redisGet(deliveryKey)).toMatch(DONE_VALUE)
    const again = await b.post(activity)
    expect(again.status).toBe(200)
    expect(again.headers.get('x-dedup-decision')).toBe('duplicate')
    const { calls, rows } = await b.h.originCalls()
    expect(rows).toBe(1)
    expect(calls).toHaveLength(1)
    expect(calls[0]).toMatchObject({
      channel: 'teams',
      kind: 'message',
      deliveryKey,
      messageKey: `${TEAMS_APP}:msteams:${C}:1700000000123`,
      body: 'hi there',
    })
  })

  it("two chats' messages with the same id (one millisecond) are two rows", async () => {
    const b = await bot()
    const id = '1700000000321'
    expect((await b.post(teamsActivity({ id, conversation: 'a:1personalAda' }))).status).toBe(200)
    expect((await b.post(teamsActivity({ id, conversation: 'a:1personalBob' }))).status).toBe(200)
    expect((await b.h.originCalls()).rows).toBe(2)
  })

  it("a channel thread's reply and its edit name one message, with or without ;messageid=", async () => {
    const b = await bot()
    const id = '1700000000322'
    const channel = '19:abc123@thread.tacv2'
    const reply = teamsActivity({ id, conversation: `${channel};messageid=1700000000001` })
    const edit = teamsActivity({
      id,
      conversation: channel,
      type: 'messageUpdate',
      eventType: 'editMessage',
    })
    await b.post(reply)
    await b.post(edit)
    const [first, second] = (await b.h.originCalls()).calls
    expect(first?.messageKey).toBe(second?.messageKey)
  })

  it('20 concurrent copies leave one row', async () => {
    const b = await bot()
    const activity = teamsActivity()
    const token = await b.token()
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () => (await b.post(activity, token)).status),
    )
    expect(answers.every((s) => s === 200 || s === 503)).toBe(true)
    expect((await b.post(activity, token)).status).toBe(200)
    expect((await b.h.originCalls()).rows).toBe(1)
  })

  it('keeps its files, images and cards as attachments, not its HTML rendering', async () => {
    const b = await bot()
    const activity = teamsActivity({
      text: 'see attached',
      attachments: [
        { contentType: 'text/html', content: '<p>see attached</p>' },
        {
          contentType: 'application/vnd.microsoft.teams.file.download.info',
          contentUrl: 'https://contoso.sharepoint.com/sites/x/report.pdf',
          name: 'report.pdf',
          content: {
            downloadUrl: 'https://download.example/report.pdf?token=abc',
            uniqueId: '1150D938-8870-4044-9F2C-5BBDEBA70C9D',
            fileType: 'pdf',
          },
        },
        {
          contentType: 'image/png',
          contentUrl: 'https://smba.example/v3/attachments/1/views/original',
        },
      ],
    })
    expect((await b.post(activity)).status).toBe(200)
    const [call] = (await b.h.originCalls()).calls
    expect(call?.attachments).toEqual([
      {
        kind: 'file',
        mediaId: '1150D938-8870-4044-9F2C-5BBDEBA70C9D',
        url: 'https://download.example/report.pdf?token=abc',
        fileName: 'report.pdf',
        content: { fileType: 'pdf' },
      },
      {
        kind: 'image',
        mimeType: 'image/png',
        url: 'https://smba.example/v3/attachments/1/views/original',
      },
    ])
  })

  it('the largest body MAX_BODY_BYTES allows is one row; one byte more is 413, nothing written', async () => {
    const b = await bot()
    const activity = teamsActivity({ text: '' })
    const padding = 262_144 - JSON.stringify(activity).length
    const largest = JSON.stringify({ ...activity, text: 'x'.repeat(padding) })
    expect(new TextEncoder().encode(largest).byteLength).toBe(262_144)
    expect((await b.post(largest)).status).toBe(200)
    expect((await b.h.originCalls()).rows).toBe(1)
    const over = await bot()
    const tooLarge = JSON.stringify({ ...activity, text: 'x'.repeat(padding + 1) })
    expect((await over.post(tooLarge)).status).toBe(413)
    await nothingWritten(over.h)
  })
})

describe('Teams: answered within its ~15 s', () => {
  it('an origin slower than Teams waits: queued and answered 200 long before Teams resends', async () => {
    const sent: SpoolMessage[] = []
    const spool = {
      send: async (message: SpoolMessage) => void sent.push(structuredClone(message)),
    }
    const b = await bot([], { SPOOL: spool as unknown as Env['SPOOL'], ORIGIN_TIMEOUT_MS: '30000' })
    await b.h.setOriginMode({ kind: 'delay', ms: 20_000 })
    const activity = teamsActivity()
    const startedAt = Date.now()
    const response = await b.post(activity)
    expect(Date.now() - startedAt).toBeLessThan(10_000)
    expect(response.status).toBe(200)
    expect(response.headers.get('x-dedup-decision')).toBe('spooled')
    expect(sent).toHaveLength(1)
    const key = `dedup:teams:${TEAMS_APP}:msteams:${C}:${String(activity.id)}`
    expect(await b.h.redisGet(key)).toMatch(SPOOLED_VALUE)
  })
})

describe("Teams: Microsoft's keys out of reach", () => {
  it('is no refusal but a 503 with Retry-After (Teams sends it again), and writes nothing', async () => {
    const signer = await teamsSigner()
    const h = harness({
      TEAMS_APP_IDS: TEAMS_APP,
      TEAMS_OPENID_METADATA_URL: `${inject('keyDocumentsUrl')}/${randomId()}/nothing-here`,
    })
    const token = await teamsToken(signer)
    const response = await h.deliver(teamsRequest(URL_, teamsActivity(), token))
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('30')
    expect(await response.json()).toEqual({
      error: { code: 'vendor_keys_unavailable', message: 'signing keys unavailable' },
    })
    expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
    expect((await h.originCalls()).calls).toHaveLength(0)
  })
})

describe('Teams: every refusal is 403 and writes nothing', () => {
  const cases: Array<[string, (b: Bot) => Promise<string | null>, Record<string, unknown>?]> = [
    ['no token', async () => null],
    ['a token of another issuer', (b) => b.token({ iss: 'https://sts.windows.net/evil/' })],
    [
      'a token for a bot not configured (another tenant)',
      (b) => b.token({ aud: '00000000-0000-4000-8000-000000000000' }),
    ],
    ['an expired token (past the 5 min skew)', (b) => b.token({ expiresIn: -400 })],
    ['a key the JWKS does not list', (b) => b.token({ kid: 'not-a-published-key' })],
    [
      'a forged signature (another key under the published kid)',
      async (b) => b.token({}, { ...(await teamsSigner(b.signer.kid)), kid: b.signer.kid }),
    ],
    [
      "a serviceUrl other than the activity's",
      (b) => b.token({ serviceUrl: 'https://attacker.example/' }),
    ],
    ['no serviceurl claim', (b) => b.token({ serviceUrl: null })],
  ]
  it.each(cases)('%s', async (_name, token) => {
    const b = await bot()
    const response = await b.post(teamsActivity(), await token(b))
    expect(response.status).toBe(403)
    expect(await response.text()).not.toMatch(/eyJ/)
    await nothingWritten(b.h)
  })

  it("a key that does not endorse the activity's channelId", async () => {
    const webchatOnly = await teamsSigner(undefined, ['webchat'])
    const b = await bot([webchatOnly])
    const response = await b.post(teamsActivity(), await b.token({}, webchatOnly))
    expect(response.status).toBe(403)
    await nothingWritten(b.h)
    // The same key for the channel it endorses is accepted.
    const ok = await b.post(teamsActivity({ channelId: 'webchat' }), await b.token({}, webchatOnly))
    expect(ok.status).toBe(200)
  })

  it('an HS256 token "signed" with the public key is refused', async () => {
    const b = await bot()
    const [header, payload] = (await b.token()).split('.')
    const forged = `${btoa(JSON.stringify({ alg: 'HS256', kid: b.signer.kid })).replace(/=+$/, '')}.${payload}.${header}`
    expect((await b.post(teamsActivity(), forged)).status).toBe(403)
    await nothingWritten(b.h)
  })
})

describe('Teams: tenants are bots', () => {
  it("another configured bot writes under its own app id, never the first bot's rows", async () => {
    const b = await bot()
    const id = '1700000000999'
    expect((await b.post(teamsActivity({ id }))).status).toBe(200)
    const other = teamsActivity({
      id,
      appId: TEAMS_OTHER_APP,
      type: 'messageDelete',
      eventType: 'softDeleteMessage',
    })
    expect((await b.post(other, await b.token({ aud: TEAMS_OTHER_APP }))).status).toBe(200)
    const { calls } = await b.h.originCalls()
    expect(calls.map((c) => [c.kind, c.messageKey])).toEqual([
      ['message', `${TEAMS_APP}:msteams:${C}:${id}`],
      ['delete', `${TEAMS_OTHER_APP}:msteams:${C}:${id}`],
    ])
  })
})

describe('Teams: edits and deletes', () => {
  it("an edit and a delete name the message's key, each its own delivery; resends are duplicates", async () => {
    const b = await bot()
    const id = '1700000000777'
    const edit = teamsActivity({ id, type: 'messageUpdate', eventType: 'editMessage', text: 'v2' })
    const del = teamsActivity({ id, type: 'messageDelete', eventType: 'softDeleteMessage' })
    for (const activity of [edit, teamsActivity({ id, text: 'v1' }), edit, del, del]) {
      expect((await b.post(activity)).status).toBe(200)
    }
    const { calls } = await b.h.originCalls()
    expect(calls.map((c) => [c.kind, c.messageKey, c.deliveryKey])).toEqual([
      [
        'edit',
        `${TEAMS_APP}:msteams:${C}:${id}`,
        expect.stringMatching(
          new RegExp(`^dedup:teams:${TEAMS_APP}:msteams:${C}:${id}:edit:[0-9a-f]{16}$`),
        ),
      ],
      ['message', `${TEAMS_APP}:msteams:${C}:${id}`, `dedup:teams:${TEAMS_APP}:msteams:${C}:${id}`],
      [
        'delete',
        `${TEAMS_APP}:msteams:${C}:${id}`,
        expect.stringMatching(
          new RegExp(`^dedup:teams:${TEAMS_APP}:msteams:${C}:${id}:delete:[0-9a-f]{16}$`),
        ),
      ],
    ])
  })

  it('a second edit of the same message is another delivery', async () => {
    const b = await bot()
    const id = '1700000000778'
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
    await b.post(
      teamsActivity({
        id,
        type: 'messageUpdate',
        eventType: 'editMessage',
        text: 'a',
        timestamp: at(1),
      }),
    )
    await b.post(
      teamsActivity({
        id,
        type: 'messageUpdate',
        eventType: 'editMessage',
        text: 'b',
        timestamp: at(2),
      }),
    )
    expect((await b.h.originCalls()).calls.map((c) => c.body)).toEqual(['a', 'b'])
  })
})

describe('Teams: what is not a message', () => {
  it.each(['conversationUpdate', 'typing', 'messageReaction', 'installationUpdate'])(
    '%s is acknowledged, nothing written',
    async (type) => {
      const b = await bot()
      const response = await b.post(teamsActivity({ type }))
      expect(response.status).toBe(200)
      expect(response.headers.get('x-dedup-decision')).toBe('ignored')
      await nothingWritten(b.h)
    },
  )

  it('an invoke asking for sign-in or UI is acknowledged, nothing written; a task/submit is kept as unrecognized', async () => {
    const b = await bot()
    const invoke = (name: string, value: unknown) => ({
      ...teamsActivity({ type: 'invoke' }),
      name,
      value,
    })
    const signIn = await b.post(invoke('signin/verifyState', { state: '123456' }))
    expect(signIn.status).toBe(200)
    expect(signIn.headers.get('x-dedup-decision')).toBe('ignored')
    await nothingWritten(b.h)
    const submit = await b.post(invoke('task/submit', { data: { comment: 'call me back' } }))
    expect(submit.status).toBe(200)
    expect(submit.headers.get('x-dedup-decision')).toBe('unrecognized')
  })

  it('a message without an id is forwarded under a hash of what it says; a resend is a duplicate', async () => {
    const b = await bot()
    const activity = teamsActivity({ id: null, text: 'no id here' })
    expect((await b.post(activity)).headers.get('x-dedup-decision')).toBe('forwarded')
    expect((await b.post(activity)).headers.get('x-dedup-decision')).toBe('duplicate')
    const { calls, rows } = await b.h.originCalls()
    expect(rows).toBe(1)
    expect(calls[0]?.messageKey).toMatch(new RegExp(`^${TEAMS_APP}:msteams:${C}:h[0-9a-f]{32}$`))
  })
})
