/**
 * Teams on a connection's route: the connection is one bot (its Microsoft App ID, no secret: the
 * token is signed by Microsoft's keys), so a token for another bot is refused there, though that
 * bot may well be served elsewhere.
 */
import { describe, expect, inject, it } from 'vitest'
import {
  randomId,
  TEAMS_APP,
  TEAMS_OTHER_APP,
  teamsActivity,
  teamsKeyDocuments,
  teamsRequest,
  teamsSigner,
  teamsToken,
} from '../../local/vendor-deliveries'
import { GATEWAY } from '../support/workerd/harness'
import { edgeHarness, putConnection, routeOf } from './support/edge'

describe('Teams, by route id', () => {
  it("its bot's token verifies, another bot's does not; the event names the connection", async () => {
    const signer = await teamsSigner()
    const base = `${inject('keyDocumentsUrl')}/${randomId()}`
    const documents = teamsKeyDocuments(`${base}/keys`, [signer])
    await fetch(`${base}/openid`, { method: 'PUT', body: JSON.stringify(documents.metadata) })
    await fetch(`${base}/keys`, { method: 'PUT', body: JSON.stringify(documents.jwks) })
    const h = edgeHarness({ TEAMS_OPENID_METADATA_URL: `${base}/openid` })
    const record = await putConnection({ channel: 'teams', account: TEAMS_APP, secrets: [] })
    const url = routeOf('teams', record.id)
    const activity = () => teamsActivity({ id: String(1_700_000_000_000 + Date.now()) })
    const ok = await h.deliver(teamsRequest(url, activity(), await teamsToken(signer)))
    expect(ok.status).toBe(200)
    const other = await teamsToken(signer, { aud: TEAMS_OTHER_APP })
    const refused = await h.deliver(teamsRequest(url, activity(), other))
    expect(refused.status).toBe(403)
    const { calls } = await h.originCalls()
    expect(calls.map((call) => call.connection)).toEqual([{ id: record.id, version: 1 }])
  })
})

describe('Teams, on its shared path: the registry answers for the bot once its JWT verified', () => {
  it('disabled in the registry though TEAMS_APP_IDS lists it: 403; active: the event names it', async () => {
    const signer = await teamsSigner()
    const base = `${inject('keyDocumentsUrl')}/${randomId()}`
    const documents = teamsKeyDocuments(`${base}/keys`, [signer])
    await fetch(`${base}/openid`, { method: 'PUT', body: JSON.stringify(documents.metadata) })
    await fetch(`${base}/keys`, { method: 'PUT', body: JSON.stringify(documents.jwks) })
    const env = { TEAMS_OPENID_METADATA_URL: `${base}/openid`, TEAMS_APP_IDS: TEAMS_APP }
    const url = `${GATEWAY}/webhooks/teams`
    const activity = () => teamsActivity({ id: String(1_700_000_000_000 + Date.now()) })
    const spec = { channel: 'teams' as const, account: TEAMS_APP, secrets: [] }

    const disabled = await putConnection({ ...spec, status: 'disabled' }, [TEAMS_APP])
    const h = edgeHarness(env)
    const refused = await h.deliver(teamsRequest(url, activity(), await teamsToken(signer)))
    expect(refused.status).toBe(403)
    expect((await h.originCalls()).calls).toHaveLength(0)

    const active = await putConnection(spec, [TEAMS_APP])
    expect(active.id).not.toBe(disabled.id)
    const fresh = edgeHarness(env)
    const ok = await fresh.deliver(teamsRequest(url, activity(), await teamsToken(signer)))
    expect(ok.status).toBe(200)
    const { calls } = await fresh.originCalls()
    expect(calls.map((call) => call.connection)).toEqual([{ id: active.id, version: 1 }])
  })
})
