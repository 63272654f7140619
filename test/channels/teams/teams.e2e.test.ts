/**
 * Microsoft Teams end to end: the Worker in Miniflare, the real origin, real Postgres and Redis,
 * and Bot Framework tokens minted by a key the test generates, served as OpenID metadata + JWKS
 * by a local stand-in for login.botframework.com. The assertions are on rows.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type KeyDocumentServer, startKeyDocuments } from '../../../local/key-documents'
import {
  TEAMS_CONVERSATION_TAG as C,
  TEAMS_APP,
  TEAMS_OTHER_APP,
  type TeamsSigner,
  teamsActivity,
  teamsDevSigner,
  teamsKeyDocuments,
  teamsRequest,
  teamsToken,
} from '../../../local/vendor-deliveries'
import { send, startTestStack, type TestStack } from '../../support/test-stack'

let e2e: TestStack
let documents: KeyDocumentServer
let signer: TeamsSigner
/** What the stand-in serves: send-webhook's development key, which these tests sign with too. */
let served: Record<string, unknown>

beforeAll(async () => {
  // The Worker caches the keys it fetched first (send-webhook's, in the first test) for a day.
  signer = await teamsDevSigner()
  documents = await startKeyDocuments()
  const docs = teamsKeyDocuments(`${documents.url}/keys`, [signer])
  served = { '/openid': docs.metadata, '/keys': docs.jwks }
  await documents.close()
  documents = await startKeyDocuments({
    port: Number(new URL(documents.url).port),
    documents: served,
  })
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
const del = (id: string, timestamp?: string) =>
  teamsActivity({ id, type: 'messageDelete', eventType: 'softDeleteMessage', timestamp })
const undelete = (id: string, timestamp: string) =>
  teamsActivity({ id, type: 'messageUpdate', eventType: 'undeleteMessage', timestamp })
const at = (second: number) => new Date(Date.UTC(2026, 11, 3, 9, 0, second)).toISOString()

describe('Teams end to end', () => {
  it('send-webhook teams: the same activity twice is new, then a duplicate', async () => {
    const id = freshId()
    const metadataUrl = `${documents.url}/openid`
    // First, so that the Worker fetches its keys from what send-webhook serves while it sends.
    await documents.close()
    try {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [
          '--import',
          'tsx',
          'local/send-webhook.ts',
          'teams',
          '--id',
          id,
          '--times',
          '2',
          '--url',
          e2e.stack.worker.url,
        ],
        {
          env: { ...process.env, TEAMS_APP_IDS: TEAMS_APP, TEAMS_OPENID_METADATA_URL: metadataUrl },
          timeout: 60_000,
        },
      )
      expect(stdout).toMatch(/1\/2 teams -> 200 new/)
      expect(stdout).toMatch(/2\/2 teams -> 200 duplicate/)
    } finally {
      documents = await startKeyDocuments({
        port: Number(new URL(metadataUrl).port),
        documents: served,
      })
    }
    expect(await rowsOf(`${TEAMS_APP}:msteams:${C}:${id}`)).toHaveLength(1)
  })
  it('a message resent 5 times and in 10 concurrent copies is one row of its bot', async () => {
    const id = freshId()
    const activity = teamsActivity({ id, text: 'hello' })
    for (let i = 0; i < 5; i++) expect(await post(activity)).toBe(200)
    const statuses = await Promise.all(Array.from({ length: 10 }, () => post(activity)))
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${C}:${id}`)).toMatchObject([
      { body: 'hello', edited: false, deleted: false },
    ])
  })

  it('an edit and a delete after their message: the row edited, then deleted', async () => {
    const id = freshId()
    expect(await post(teamsActivity({ id, text: 'v1' }))).toBe(200)
    expect(await post(edit(id, 'v2'))).toBe(200)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${C}:${id}`)).toMatchObject([
      { body: 'v2', edited: true },
    ])
    const deletion = del(id)
    expect(await post(deletion)).toBe(200)
    expect(await post(deletion)).toBe(200)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${C}:${id}`)).toMatchObject([{ deleted: true }])
  })

  it('an edit and a delete before their message: still one row, deleted', async () => {
    const id = freshId()
    expect(await post(edit(id, 'v2'))).toBe(200)
    expect(await post(del(id))).toBe(200)
    expect(await post(teamsActivity({ id, text: 'v1' }))).toBe(200)
    const rows = await rowsOf(`${TEAMS_APP}:msteams:${C}:${id}`)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.deleted).toBe(true)
  })

  // Microsoft's undelete and soft delete activities (MicrosoftDocs/msteams-docs
  // msteams-platform/bots/how-to/conversations/conversation-messages.md @
  // bbf096a63707fddbf443b2b735aaccdc20e35f48): undeleteMessage restores the message it names.
  it('undeleteMessage restores the row; a late undelete does not undo a newer delete', async () => {
    const id = freshId()
    const key = `${TEAMS_APP}:msteams:${C}:${id}`
    expect(await post(teamsActivity({ id, text: 'v1', timestamp: at(0) }))).toBe(200)
    expect(await post(del(id, at(4)))).toBe(200)
    expect(await post(undelete(id, at(9)))).toBe(200)
    expect(await post(undelete(id, at(9)))).toBe(200)
    expect(await rowsOf(key)).toEqual([
      { body: 'v1', tenant: TEAMS_APP, edited: false, deleted: false },
    ])
    // Deleted again, then an undelete older than that delete arrives late: still deleted.
    expect(await post(del(id, at(12)))).toBe(200)
    expect(await post(undelete(id, at(10)))).toBe(200)
    expect(await rowsOf(key)).toEqual([
      { body: 'v1', tenant: TEAMS_APP, edited: false, deleted: true },
    ])
  })

  it("two bots with the same activity id: two rows, each its bot's", async () => {
    const id = freshId()
    expect(await post(teamsActivity({ id, text: 'a' }))).toBe(200)
    expect(
      await post(teamsActivity({ id, text: 'b', appId: TEAMS_OTHER_APP }), TEAMS_OTHER_APP),
    ).toBe(200)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${C}:${id}`)).toMatchObject([
      { body: 'a', tenant: TEAMS_APP },
    ])
    expect(await rowsOf(`${TEAMS_OTHER_APP}:msteams:${C}:${id}`)).toMatchObject([
      { body: 'b', tenant: TEAMS_OTHER_APP },
    ])
  })

  it('a token for a bot not configured: 403, no row', async () => {
    const id = freshId()
    expect(await post(teamsActivity({ id }), '00000000-0000-4000-8000-000000000000')).toBe(403)
    expect(await rowsOf(`${TEAMS_APP}:msteams:${C}:${id}`)).toEqual([])
  })
})
