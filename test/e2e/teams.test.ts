/**
 * Microsoft Teams end to end: the Worker in Miniflare, the real origin, real Postgres and Redis,
 * and Bot Framework tokens minted by a key the test generates, served as OpenID metadata + JWKS
 * by a local stand-in for login.botframework.com. The assertions are on rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  TEAMS_APP,
  TEAMS_OTHER_APP,
  type TeamsSigner,
  teamsActivity,
  teamsKeyDocuments,
  teamsRequest,
  teamsSigner,
  teamsToken,
} from '../../local/vendor-deliveries'
import { type KeyDocumentServer, startKeyDocuments } from '../support/key-documents'
import { send, startTestStack, type TestStack } from '../support/test-stack'

let e2e: TestStack
let documents: KeyDocumentServer
let signer: TeamsSigner

beforeAll(async () => {
  documents = await startKeyDocuments()
  signer = await teamsSigner()
  const docs = teamsKeyDocuments(`${documents.url}/keys`, [signer])
  await fetch(`${documents.url}/openid`, { method: 'PUT', body: JSON.stringify(docs.metadata) })
  await fetch(`${documents.url}/keys`, { method: 'PUT', body: JSON.stringify(docs.jwks) })
  e2e = await startTestStack('e2e-teams', {
    workerVars: {
      SPOOL_CHANNELS: 'none',
      TEAMS_APP_IDS: `${TEAMS_APP},${TEAMS_OTHER_APP}`,
      TEAMS_OPENID_METADATA_URL: `${documents.url}/openid`,
    },
  })
}, 180_000)

afterAll(async () => {
  await e2e?.stop()
  await documents?.close()
})

async function post(activity: Record<string, unknown>, aud = TEAMS_APP): Promise<number> {
  const token = await teamsToken(signer, { aud })
  return send(teamsRequest(`${e2e.stack.worker.url}/webhooks/teams`, activity, token))
}

async function rowsOf(messageKey: string) {
  const { rows } = await e2e.stack.sql.query<{
    body: string
    tenant: string
    edited: boolean
    deleted: boolean
  }>(
    `SELECT m.body, u.tenant, m.edited_at IS NOT NULL AS edited,
            m.deleted_at IS NOT NULL AS deleted
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
       JOIN customers u ON u.id = c.customer_id
      WHERE m.channel = 'teams' AND m.channel_message_id = $1`,
    [messageKey],
  )
  return rows
}

const freshId = () => String(1_700_000_000_000 + Math.floor(Math.random() * 1e9))
const edit = (id: string, text: string) =>
  teamsActivity({ id, type: 'messageUpdate', eventType: 'editMessage', text })
const del = (id: string) =>
  teamsActivity({ id, type: 'messageDelete', eventType: 'softDeleteMessage' })

describe('Teams end to end', () => {
  it('a message resent 5 times and in 10 concurrent copies is one row of its bot', async () => {
    const id = freshId()
    const activity = teamsActivity({ id, text: 'hello' })
    for (let i = 0; i < 5; i++) expect(await post(activity)).toBe(200)
    const statuses = await Promise.all(Array.from({ length: 10 }, () => post(activity)))
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${id}`)).toMatchObject([
      { body: 'hello', edited: false, deleted: false },
    ])
  })

  it('an edit and a delete after their message: the row edited, then deleted', async () => {
    const id = freshId()
    expect(await post(teamsActivity({ id, text: 'v1' }))).toBe(200)
    expect(await post(edit(id, 'v2'))).toBe(200)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${id}`)).toMatchObject([{ body: 'v2', edited: true }])
    const deletion = del(id)
    expect(await post(deletion)).toBe(200)
    expect(await post(deletion)).toBe(200)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${id}`)).toMatchObject([{ deleted: true }])
  })

  it('an edit and a delete before their message: still one row, deleted', async () => {
    const id = freshId()
    expect(await post(edit(id, 'v2'))).toBe(200)
    expect(await post(del(id))).toBe(200)
    expect(await post(teamsActivity({ id, text: 'v1' }))).toBe(200)
    const rows = await rowsOf(`${TEAMS_APP}:msteams:${id}`)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.deleted).toBe(true)
  })

  it("two bots with the same activity id: two rows, each its bot's", async () => {
    const id = freshId()
    expect(await post(teamsActivity({ id, text: 'a' }))).toBe(200)
    expect(
      await post(teamsActivity({ id, text: 'b', appId: TEAMS_OTHER_APP }), TEAMS_OTHER_APP),
    ).toBe(200)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${id}`)).toMatchObject([
      { body: 'a', tenant: TEAMS_APP },
    ])
    expect(await rowsOf(`${TEAMS_OTHER_APP}:msteams:${id}`)).toMatchObject([
      { body: 'b', tenant: TEAMS_OTHER_APP },
    ])
  })

  it('a token for a bot not configured: 403, no row', async () => {
    const id = freshId()
    expect(await post(teamsActivity({ id }), '00000000-0000-4000-8000-000000000000')).toBe(403)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${id}`)).toEqual([])
  })
})
