/**
 * Microsoft Teams (Bot Framework) fixtures: activities, the keys and tokens that sign them, and the
 * OpenID documents that publish those keys.
 * @module
 */
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose'
import { BOT_FRAMEWORK_ISSUER } from '../../worker/channels/teams-verify'
import { nowSeconds, randomBelow, randomId, type SignedDelivery } from './common'

/** Two bots' Microsoft App IDs (the tenants of the Teams tests). */
export const TEAMS_APP = '8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a'
export const TEAMS_OTHER_APP = '1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d'
export const TEAMS_SERVICE_URL = 'https://smba.trafficmanager.net/amer/'
/** The default activity's conversation (a personal chat), and its tag in the keys (pinned). */
export const TEAMS_CONVERSATION = 'a:1XyZpersonalchat'
export const TEAMS_CONVERSATION_TAG = 'cd0253d5e7495731c'

/**
 * A signing key pair as Microsoft's JWKS would list it (with `endorsements`), to mint Bot
 * Framework tokens locally: there is no official test vector (the doc says to test so).
 */
export interface TeamsSigner {
  kid: string
  privateKey: CryptoKey
  /** Its public JWK as a JWKS entry. */
  jwk: Record<string, unknown>
}

export async function teamsSigner(
  kid = `key-${randomId()}`,
  endorsements: readonly string[] = ['msteams'],
): Promise<TeamsSigner> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(publicKey)), kid, use: 'sig', endorsements }
  return { kid, privateKey, jwk }
}

/**
 * A fixed development key pair for `send-webhook teams` (RS256; development only, never trusted
 * anywhere real: it is public in this repository). Fixed, so that the keys a local Worker cached
 * stay the ones the next run signs with.
 */
export const TEAMS_DEV_KEY = {
  kty: 'RSA',
  n: '0wKjC8qpi5DvsHHVlsNFOjDJl7f7fOmwIxEA5YCKLpeGX_yafq5FDt-JR79lri-Gr6d9B1Lp047tSQAYWw4WR0X3MlL0kKR1_uRb8vLhW0J220fkXPV-boflsQpBA6IPFhwiBhzAcu6Rbi1mcgiWeigCkmgmYrbOeoEBy1JMm8qvbiX3Zo5pLS9mZkSO8H4cHts5GVZRjm1qyRk5K-PhS9_bVMEQTtpc8zC4z8ShUYm-17-4S_ZKNepSvVib0g2TJnGVgCHPWnWWGOAcBRr0Qs5rdK-bBQZBM6AjW5z7C6FS93_LIg2OGSxVr9BtxmP1MgqGJI1ax2IRzJBPA3Dt6Q',
  e: 'AQAB',
  d: 'E_nDGKnXXMHcRwOybiLPP2qAncR04jGMk01CnKILXXd1E59_ZVsMaOjgKfLPEUB-NiEbdMw0cZWCwMSUXwOu4pFs4jk4iNGLkBVAinfUE1vFPQ4JwC5yCSGurLtlReRGHFg5H64CHqnstOrxsKg_zTxTaKvDvS2ZehRovehCc1mpNP2KWag5izgp9gAemMr41aLSuxrR7e102hog5qUYmfal-6UUyiaups2HEvzPOKMaiRdiiPDUG1iESP5dshd-zuZn-vSI_UUszOeNdAstxPBWsnWRRB34jVqXYYianACDMqmU5vlH989uQHRnWfTBfkoQYjDVEkvfPDlRmTFqpw',
  p: '75f47F0druk94qa1mVQhY2eSFswzErOjYUTkfMOK9pUA7LgRC9CmhyGrgkqZkUuJIfecMH15sFR570oH1OgGXXlmlqdr7flzQdb5fQWFghruB0tJwjC5aIcbq8a7-B-IAjVQpgR0bbQ5JYEU4i7w86S0VUa5YfFAvUrTO0P1ZHM',
  q: '4XWaucTYVihkXlZChfi5xTNHt0aoSBZV-X9L6yWXaaK3rgfn4ETCXUb7DqAhmRRQYUjItNFI0ksLp3pw25TjgEMsx96t3S2d29KIRe3ZYrf9Ee1Eb4UBG9mJMFmstIadikHy-X3sy7S6fahlVAYHUBKspIPaV9halKVBrotKqTM',
  dp: 'B3gKV3vzn-8_caBWyufXfpzM7g8BjJSzBCY8pTMHUvaEJ9z5ExA3EMFY8l_W97OOG9P3N3_B2mBXyMDbC6UMBb_yFcI0WB_NmwDTmDUi21JxlyKeswIH1Z1YnHs-gtagy8jTsckzw_O5UFT8zKw_8KhywrHIt6fop738Zb2Rmcc',
  dq: 'COj66miLHCyQeuHx0xWXUeHK7cVPFTo8v5V2TJ65syUJGUmaslRFUiZh-Zv-d-xDmPSlae_zbswkc8P0_diOfR0qgeOc_2a0HGHfnNPfiXU3_SNhVv7soksgjtacaq3_P92HWrDNUOedjyW-i2mJlHKIfB_x2xLj0YgOZnV-x90',
  qi: '34AvV2NFn0rbODhKSxkn_BFhki47WHW11XnylkGyZ6ZxwOVDJ8O-bvrN-OldFsmYEnWVGN50AmQ6yMlG06XMbFSFmo0QSaxqbMCTbDs8DylRfAZaDLFAJuTcOFFKxNAWutuQnAJLVnx01GrSxaO67uf9eLyKmHTf_PHRAxYGRiM',
} as const

/** The development signer ({@link TEAMS_DEV_KEY}), kid `dev-key`, endorsing msteams. */
export async function teamsDevSigner(): Promise<TeamsSigner> {
  const privateKey = (await importJWK({ ...TEAMS_DEV_KEY }, 'RS256')) as CryptoKey
  const { kty, n, e } = TEAMS_DEV_KEY
  const jwk = { kty, n, e, kid: 'dev-key', use: 'sig', endorsements: ['msteams'] }
  return { kid: 'dev-key', privateKey, jwk }
}

/** The OpenID metadata and JWKS documents of `signers`, as login.botframework.com serves them. */
export function teamsKeyDocuments(jwksUrl: string, signers: readonly TeamsSigner[]) {
  return {
    metadata: {
      issuer: BOT_FRAMEWORK_ISSUER,
      jwks_uri: jwksUrl,
      id_token_signing_alg_values_supported: ['RS256'],
    },
    jwks: { keys: signers.map((signer) => signer.jwk) },
  }
}

export interface TeamsTokenClaims {
  aud?: string
  iss?: string
  serviceUrl?: string | null
  /** Seconds from now. */
  expiresIn?: number
  /** The header's kid (default the signer's). */
  kid?: string
}

/** A Connector → bot token as the Bot Framework signs it (RS256, 1 h, `serviceurl` claim). */
export function teamsToken(signer: TeamsSigner, claims: TeamsTokenClaims = {}): Promise<string> {
  const now = nowSeconds()
  const serviceUrl = claims.serviceUrl === undefined ? TEAMS_SERVICE_URL : claims.serviceUrl
  return new SignJWT(serviceUrl === null ? {} : { serviceurl: serviceUrl })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: claims.kid ?? signer.kid })
    .setIssuer(claims.iss ?? BOT_FRAMEWORK_ISSUER)
    .setAudience(claims.aud ?? TEAMS_APP)
    .setIssuedAt(now - 60)
    .setNotBefore(now - 60)
    .setExpirationTime(now + (claims.expiresIn ?? 3600))
    .sign(signer.privateKey)
}

export interface TeamsActivityFields {
  type?: string
  /** null: no id at all. */
  id?: string | null
  text?: string
  eventType?: string
  from?: string
  timestamp?: string
  channelId?: string
  serviceUrl?: string
  attachments?: unknown[]
  appId?: string
  conversation?: string
}

/** A Teams activity shaped like the Bot Framework's examples (a personal chat with the bot). */
export function teamsActivity(fields: TeamsActivityFields = {}): Record<string, unknown> {
  const appId = fields.appId ?? TEAMS_APP
  return {
    type: fields.type ?? 'message',
    ...(fields.id === null
      ? {}
      : { id: fields.id ?? String(1_700_000_000_000 + randomBelow(1e9)) }),
    timestamp: fields.timestamp ?? new Date().toISOString(),
    localTimestamp: fields.timestamp ?? new Date().toISOString(),
    serviceUrl: fields.serviceUrl ?? TEAMS_SERVICE_URL,
    channelId: fields.channelId ?? 'msteams',
    from: {
      id: fields.from ?? '29:1AbCdEfGhIjKlMnOp',
      name: 'Ada Lovelace',
      aadObjectId: 'c9f4a1d2-0000-4000-8000-000000000001',
    },
    conversation: {
      conversationType: 'personal',
      tenantId: 'f1e2d3c4-0000-4000-8000-000000000002',
      id: fields.conversation ?? TEAMS_CONVERSATION,
    },
    recipient: { id: `28:${appId}`, name: 'Inbound Bot' },
    textFormat: 'plain',
    ...(fields.text === undefined && fields.type === 'messageDelete'
      ? {}
      : { text: fields.text ?? 'hello from teams' }),
    ...(fields.attachments ? { attachments: fields.attachments } : {}),
    entities: [{ type: 'clientInfo', locale: 'en-US', country: 'US', platform: 'Web' }],
    channelData: {
      tenant: { id: 'f1e2d3c4-0000-4000-8000-000000000002' },
      ...(fields.eventType ? { eventType: fields.eventType } : {}),
    },
    locale: 'en-US',
  }
}

/** A POST of `activity` to `url` with `Authorization: Bearer {token}`. */
export function teamsRequest(
  url: string,
  activity: Record<string, unknown> | string,
  token: string | null,
): Request {
  const text = typeof activity === 'string' ? activity : JSON.stringify(activity)
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: text,
  })
}

/**
 * A Teams message activity with a fresh id unless given, its token signed now by the development
 * key (TEAMS_DEV_KEY: the gateway must serve its JWKS), or forged: signed by another key under the
 * same kid.
 */
export function teamsDelivery(
  fields: TeamsActivityFields & { forged?: boolean } = {},
): SignedDelivery {
  const id = fields.id ?? String(1_700_000_000_000 + randomBelow(1e12))
  const activity = teamsActivity({ ...fields, id })
  const appId = fields.appId ?? TEAMS_APP
  // Its keys are known without hashing: the default conversation's tag is pinned.
  if (fields.conversation !== undefined)
    throw new Error('teamsDelivery: the default conversation only')
  const key = `msteams:${TEAMS_CONVERSATION_TAG}:${id}`
  const signer = async () => {
    const dev = await teamsDevSigner()
    return fields.forged ? { ...(await teamsSigner(dev.kid)), kid: dev.kid } : dev
  }
  return {
    channel: 'teams',
    messageKey: `${appId}:${key}`,
    deliveryKey: `dedup:teams:${appId}:${key}`,
    request: async (base) =>
      teamsRequest(
        `${base}/webhooks/teams`,
        activity,
        await teamsToken(await signer(), { aud: appId }),
      ),
  }
}
