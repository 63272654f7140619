/**
 * A Cloudflare Access team served on this machine, for the console's single sign-on tests: its
 * published key set at `/cdn-cgi/access/certs` (the shape Access publishes: `keys` plus
 * `public_cert` / `public_certs`), and assertions signed as Access signs them (RS256, a `kid`, the
 * claims of an application token, per developers.cloudflare.com/cloudflare-one/identity/
 * authorization-cookie/application-token). Also a key of nobody's team, for forgeries.
 * @module
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose'

export const TEST_AUD = '32eafc7626e974616deaf0dc3ce63d7bcbed58a2731e84d06bc3cdf1b53c4228'

export interface AssertionOptions {
  email?: string
  aud?: string | string[]
  iss?: string
  /** Seconds from now; negative: already expired. @default 600 */
  expiresIn?: number
  /** Signed with a key that is not in the team's set, under the team's key id. */
  foreignKey?: boolean
  /** The header's key id. @default the team key's */
  kid?: string
  /** More claims (groups, custom). */
  claims?: JWTPayload
}

export interface AccessTeam {
  /** The team domain, as CONSOLE_ACCESS_TEAM_DOMAIN takes it (a loopback URL here). */
  teamDomain: string
  /** Requests for the key set so far. */
  readonly keyFetches: number
  /** Answer the key set with this status (503: Access's endpoint failing); null: the set. */
  failKeys(status: number | null): void
  assertion(options?: AssertionOptions): Promise<string>
  close(): Promise<void>
}

export async function startAccessTeam(): Promise<AccessTeam> {
  const kid = 'team-key-1'
  const team = await generateKeyPair('RS256', { extractable: true })
  const foreign = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(team.publicKey)), kid, alg: 'RS256', use: 'sig' }
  const keySet = JSON.stringify({
    keys: [jwk],
    public_cert: { kid, cert: 'not read by the console' },
    public_certs: [{ kid, cert: 'not read by the console' }],
  })
  let keyFetches = 0
  let failing: number | null = null
  const server: Server = createServer((req, res) => {
    if (req.url !== '/cdn-cgi/access/certs') {
      res.writeHead(404).end()
      return
    }
    keyFetches++
    if (failing !== null) {
      res.writeHead(failing).end('unavailable')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(keySet)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const teamDomain = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    teamDomain,
    get keyFetches() {
      return keyFetches
    },
    failKeys(status) {
      failing = status
    },
    async assertion(options = {}) {
      const now = Math.floor(Date.now() / 1000)
      const expiresIn = options.expiresIn ?? 600
      return new SignJWT({
        email: options.email ?? 'ada@customer-support.example',
        type: 'app',
        identity_nonce: '6ei69kawdKzMIAPF',
        country: 'US',
        ...options.claims,
      })
        .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? kid, typ: 'JWT' })
        .setAudience(options.aud ?? [TEST_AUD])
        .setIssuer(options.iss ?? teamDomain)
        .setSubject('7335d417-61da-459d-899c-0a01c76a2f94')
        .setIssuedAt(now - 60)
        .setNotBefore(now - 60)
        .setExpirationTime(now + expiresIn)
        .sign(options.foreignKey ? foreign.privateKey : team.privateKey)
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
