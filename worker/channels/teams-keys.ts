/**
 * The Bot Framework's token signing keys: its OpenID metadata document names a JWKS whose keys
 * each list the channels they may sign for (`endorsements`). Kept per isolate and per metadata
 * URL, as the official SDK keeps them (botframework-connector's OpenIdMetadata): refreshed once a
 * day, fetched again when a token names a key we do not hold (at most once per
 * {@link UNKNOWN_KID_REFETCH_MS}, so forged `kid`s cannot make us hammer Microsoft). A failed
 * fetch is tried again only after a backoff ({@link KEYS_RETRY}), and meanwhile the keys we had
 * serve for up to {@link KEYS_STALE_MS} past their refresh: Microsoft out of reach costs one
 * request per backoff a fetch's timeout, not every request.
 * @module
 */
import { importJWK, type JWK } from 'jose'
import { type Backoff, backoffMs } from '../../shared/backoff'
import { readBoundedBody } from '../../shared/body'
import { isRedirect, NO_REDIRECT } from '../../shared/no-redirect'
import { GatewayError } from '../errors'
import { list, obj, str } from './untrusted'

/** The SDK refreshes every 24 h (its default `tokenRefreshInterval`). */
export const KEYS_REFRESH_MS = 24 * 60 * 60 * 1000
/** The SDK refetches for an unknown key after an hour; a rotation is published well before use. */
export const UNKNOWN_KID_REFETCH_MS = 5 * 60 * 1000
/** Each of the two fetches: a token waits for it, and Teams waits 15 s for our answer. */
export const KEYS_FETCH_TIMEOUT_MS = 3_000
/** Microsoft's metadata and JWKS are a few KiB; anything much larger is not them. */
export const KEYS_MAX_BYTES = 64 * 1024
/**
 * After a failed fetch no request fetches again before this backoff (30 s, doubling to 15 min,
 * equal jitter): a token meanwhile is checked against the keys held, or answered 503 at once.
 */
export const KEYS_RETRY: Backoff = { baseMs: 30_000, maxMs: 15 * 60_000 }
/**
 * How long past {@link KEYS_REFRESH_MS} keys whose refresh keeps failing still verify: two days,
 * long enough to ride out an outage of Microsoft's endpoint, bounded so that a key Microsoft
 * withdrew while we could not see it is not trusted indefinitely.
 */
export const KEYS_STALE_MS = 2 * 24 * 60 * 60 * 1000

/** One signing key: its public key and the channels (`msteams`, `webchat`, ...) it endorses. */
export interface BotKey {
  key: CryptoKey | Uint8Array
  endorsements: ReadonlySet<string>
}

/** Teams resends after about 15 s and 30 s of no answer; a few tries later the keys may be back. */
const KEYS_RETRY_AFTER_SECONDS = 30

/**
 * Neither the metadata nor its JWKS could be read, and no earlier keys are held: nothing can be
 * verified, so nothing is refused either: 503, and Teams sends the activity again.
 */
export class BotKeysUnavailableError extends GatewayError {
  constructor(detail: string, options?: ErrorOptions) {
    super('vendor_keys_unavailable', 503, 'signing keys unavailable', `teams: ${detail}`, {
      ...options,
      retryAfterSeconds: KEYS_RETRY_AFTER_SECONDS,
    })
  }
}

interface Fetched {
  keys: ReadonlyMap<string, BotKey>
  at: number
}

/** The keys of one metadata URL, fetched when needed; `now` and `random` injectable for tests. */
export class BotKeyCache {
  private fetched: Fetched | null = null
  private lastAttempt = Number.NEGATIVE_INFINITY
  /** Failed fetches in a row, and when the next one may start. */
  private failures = 0
  private retryAt = Number.NEGATIVE_INFINITY
  /** Why the last fetch failed: what a request with no keys held is answered (503). */
  private lastError: BotKeysUnavailableError | null = null
  /** This isolate's fetches under way (each request's own: see {@link refresh}). */
  private fetching = 0

  constructor(
    readonly metadataUrl: string,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  /** The key `kid` names, or undefined when the JWKS (even fetched again) has none. */
  async key(kid: string): Promise<BotKey | undefined> {
    if (!this.fetched || this.now() - this.fetched.at >= KEYS_REFRESH_MS) await this.refresh()
    const known = this.held().get(kid)
    if (known || this.now() - this.lastAttempt < UNKNOWN_KID_REFETCH_MS) return known
    await this.refresh()
    return this.held().get(kid)
  }

  /** The keys still fit to verify (within their stale window); throws when there are none. */
  private held(): ReadonlyMap<string, BotKey> {
    if (this.fetched && this.usable()) return this.fetched.keys
    throw this.lastError ?? new BotKeysUnavailableError('no keys held')
  }

  /**
   * None during the backoff after a failure; while another request's fetch is under way, the keys
   * held serve. A request never waits on another's fetch: workerd binds an I/O promise to the
   * request that started it, and one resumed by it would do its own I/O on that request's behalf
   * ("Cannot perform I/O on behalf of a different request"). With no keys held (an isolate's
   * first tokens), each fetches for itself. A failure throws only when no keys are held (the
   * caller's {@link held} says so).
   */
  private async refresh(): Promise<void> {
    if (this.now() < this.retryAt) return
    if (this.fetching > 0 && this.usable()) return
    this.fetching += 1
    try {
      await this.fetchKeys()
      this.failures = 0
      this.retryAt = Number.NEGATIVE_INFINITY
      this.lastError = null
    } catch (err) {
      this.failures += 1
      this.retryAt = this.now() + backoffMs(KEYS_RETRY, this.failures, this.random())
      this.lastError =
        err instanceof BotKeysUnavailableError
          ? err
          : new BotKeysUnavailableError('reading the keys failed', { cause: err })
    } finally {
      this.fetching -= 1
    }
  }

  /** Whether keys fit to verify are held. */
  private usable(): boolean {
    return this.fetched !== null && this.now() - this.fetched.at < KEYS_REFRESH_MS + KEYS_STALE_MS
  }

  private async fetchKeys(): Promise<void> {
    this.lastAttempt = this.now()
    const metadata = await fetchJson(this.metadataUrl)
    const jwksUri = str(metadata.jwks_uri)
    if (!jwksUri || !/^https?:\/\//.test(jwksUri)) {
      throw new BotKeysUnavailableError('the metadata has no http(s) jwks_uri')
    }
    const keys = new Map<string, BotKey>()
    for (const entry of list((await fetchJson(jwksUri)).keys)) {
      const jwk = obj(entry)
      const kid = str(jwk?.kid)
      if (!jwk || !kid || jwk.kty !== 'RSA' || keys.has(kid)) continue
      const endorsements = new Set(list(jwk.endorsements).filter((e) => typeof e === 'string'))
      const { n, e, kty } = jwk as JWK
      const key = await importJWK({ kty, n, e }, 'RS256').catch(() => null)
      if (key) keys.set(kid, { key, endorsements })
    }
    this.fetched = { keys, at: this.now() }
  }
}

/** A bounded JSON object from `url`: timeout, no redirects, at most {@link KEYS_MAX_BYTES}. */
async function fetchJson(url: string): Promise<Record<string, unknown>> {
  try {
    const response = await fetch(url, {
      ...NO_REDIRECT,
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(KEYS_FETCH_TIMEOUT_MS),
    })
    if (!response.ok || isRedirect(response.status)) {
      await response.body?.cancel().catch(() => {})
      throw new BotKeysUnavailableError(`${new URL(url).host} answered ${response.status}`)
    }
    const body = await readBoundedBody(response, KEYS_MAX_BYTES)
    const parsed = obj(JSON.parse(body.text))
    if (!parsed) throw new BotKeysUnavailableError('not a JSON object')
    return parsed
  } catch (err) {
    if (err instanceof BotKeysUnavailableError) throw err
    throw new BotKeysUnavailableError(`fetching from ${new URL(url).host} failed`, { cause: err })
  }
}

const caches = new Map<string, BotKeyCache>()

/** This isolate's cache for a metadata URL (one per configured URL: a handful at most). */
export function botKeysFor(metadataUrl: string): BotKeyCache {
  let cache = caches.get(metadataUrl)
  if (!cache) {
    cache = new BotKeyCache(metadataUrl)
    caches.set(metadataUrl, cache)
  }
  return cache
}
