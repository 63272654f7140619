/**
 * Access tokens for the Gmail API from a stored refresh token (Google's "offline access": POST
 * the token endpoint with `grant_type=refresh_token`, form-encoded). A token is reused until
 * shortly before its `expires_in` runs out, refreshed at most once at a time, and dropped when
 * the API answers 401 with it (revoked early, or a clock that disagrees). Neither the tokens nor
 * the client secret ever reach a log or an error message.
 * @module
 */
import { errorReason, GmailHttpError, type HttpOptions, requestJson } from './http'

export interface OAuthClient {
  tokenUrl: string
  clientId: string
  clientSecret: string
  refreshToken: string
}

/** Refresh this long before Google's expiry (never less than half the token's life). */
const EXPIRY_MARGIN_MS = 60_000
/** Google sends `expires_in` (3599 today); this stands in when it does not. */
const DEFAULT_LIFETIME_S = 3600
const MAX_TOKEN_ANSWER_BYTES = 64 * 1024

interface CachedToken {
  value: string
  /** Epoch ms after which it is not used any more. */
  refreshAt: number
}

export class AccessTokens {
  private cached: CachedToken | null = null
  private refreshing: Promise<CachedToken> | null = null
  /** Token requests made (for tests and the poll log). */
  refreshes = 0

  constructor(
    private readonly client: OAuthClient,
    private readonly http: HttpOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** A token that should still be valid; refreshes (once, shared by concurrent callers) if not. */
  async get(): Promise<string> {
    if (this.cached && this.now() < this.cached.refreshAt) return this.cached.value
    this.refreshing ??= this.refresh().finally(() => {
      this.refreshing = null
    })
    return (await this.refreshing).value
  }

  /** The API refused `token`: forget it, unless a newer one already replaced it. */
  invalidate(token: string): void {
    if (this.cached?.value === token) this.cached = null
  }

  private async refresh(): Promise<CachedToken> {
    this.refreshes++
    const answer = await requestJson(
      'token',
      async () => ({
        url: this.client.tokenUrl,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          client_id: this.client.clientId,
          client_secret: this.client.clientSecret,
          refresh_token: this.client.refreshToken,
          grant_type: 'refresh_token',
        }).toString(),
      }),
      this.http,
      MAX_TOKEN_ANSWER_BYTES,
    )
    const token = answer.body.access_token
    if (answer.status !== 200 || typeof token !== 'string' || token === '') {
      // invalid_grant: the refresh token was revoked or expired (7 days for apps in "Testing").
      throw new GmailHttpError(answer.status, errorReason(answer.body), 'token')
    }
    const expiresIn = answer.body.expires_in
    const lifetimeMs =
      (typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn : DEFAULT_LIFETIME_S) * 1000
    const margin = Math.min(EXPIRY_MARGIN_MS, lifetimeMs / 2)
    this.cached = { value: token, refreshAt: this.now() + lifetimeMs - margin }
    return this.cached
  }
}
