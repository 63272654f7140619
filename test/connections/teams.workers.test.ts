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
