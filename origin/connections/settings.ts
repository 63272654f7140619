/**
 * The registry's settings: ORIGIN_KEKS seals secrets at rest (without it the registry is off and
 * its API answers 503 `registry_disabled`), EDGE_KEKS seals them for the edge (the Worker holds
 * the same), and the Cloudflare account, namespace and token the publisher writes KV with
 * (without them nothing is published; `npm run connections -- resync` can publish later).
 * Messages name variables, never values.
 * @module
 */
import { EnvelopeError, importKeyRing, type KeyRing } from '../../shared/envelope'
import { readInt, readText, readUrl, setting } from '../../shared/settings'
import { ConfigError, type OriginEnv } from '../config'

export const ORIGIN_KEKS = setting({
  name: 'ORIGIN_KEKS',
  kind: 'secret-list',
  secret: true,
  doc: 'id:base64key,… (32 bytes each; the first seals): connection secrets at rest; unset: registry off',
})
export const EDGE_KEKS = setting({
  name: 'EDGE_KEKS',
  kind: 'secret-list',
  secret: true,
  doc: "id:base64key,…: connection secrets in KV, the Worker's EDGE_KEKS; unset: nothing published",
})
export const CLOUDFLARE_ACCOUNT_ID = setting({
  name: 'CLOUDFLARE_ACCOUNT_ID',
  kind: 'string',
  secret: false,
  doc: 'the account of the CONNECTIONS KV namespace (the publisher writes it over the REST API)',
})
export const CLOUDFLARE_KV_NAMESPACE_ID = setting({
  name: 'CLOUDFLARE_KV_NAMESPACE_ID',
  kind: 'string',
  secret: false,
  doc: "the id of the Worker's CONNECTIONS KV namespace",
})
export const CLOUDFLARE_KV_API_TOKEN = setting({
  name: 'CLOUDFLARE_KV_API_TOKEN',
  kind: 'string',
  secret: true,
  doc: 'an API token with Workers KV Storage Write only',
})
export const CLOUDFLARE_API_BASE_URL = setting({
  name: 'CLOUDFLARE_API_BASE_URL',
  kind: 'url',
  secret: false,
  default: 'https://api.cloudflare.com/client/v4',
  doc: "Cloudflare's API (a test points it at a local server)",
})
export const CONNECTIONS_PUBLISH_INTERVAL_MS = setting({
  name: 'CONNECTIONS_PUBLISH_INTERVAL_MS',
  kind: 'int',
  secret: false,
  default: 1_000,
  min: 1_000,
  max: 600_000,
  doc: 'pause between publisher passes that found nothing (at most one KV write per key per pass)',
})
/** Dev only: `npm run dev` sets it; production never does (the REST publisher is the default). */
export const CONNECTIONS_LOCAL_KV_DIR = setting({
  name: 'CONNECTIONS_LOCAL_KV_DIR',
  kind: 'string',
  secret: false,
  doc: "dev only: wrangler dev's local state (.wrangler/state/v3); the publisher writes its KV there",
})

export const REGISTRY_SETTINGS = [
  ORIGIN_KEKS,
  EDGE_KEKS,
  CLOUDFLARE_ACCOUNT_ID,
  CLOUDFLARE_KV_NAMESPACE_ID,
  CLOUDFLARE_KV_API_TOKEN,
  CLOUDFLARE_API_BASE_URL,
  CONNECTIONS_PUBLISH_INTERVAL_MS,
  CONNECTIONS_LOCAL_KV_DIR,
] as const

export interface KvRestConfig {
  accountId: string
  namespaceId: string
  apiToken: string
  baseUrl: string
}

export interface RegistryConfig {
  /** Null: ORIGIN_KEKS unset, the registry is off. */
  originKeys: KeyRing | null
  /** Null: EDGE_KEKS unset, nothing is published. */
  edgeKeys: KeyRing | null
  /** Null: the Cloudflare variables unset (a local stack publishes into Miniflare instead). */
  kv: KvRestConfig | null
  /** Dev only: wrangler dev's local state, written when `kv` is null (kv-local.ts). */
  localKvDir: string | null
  publishIntervalMs: number
}

async function ring(env: OriginEnv, name: string, problems: string[]): Promise<KeyRing | null> {
  try {
    return await importKeyRing(env[name])
  } catch (err) {
    if (!(err instanceof EnvelopeError)) throw err
    problems.push(`${name}: ${err.message} (docs/connections.md "Keys" shows how to make one)`)
    return null
  }
}

/** @throws {ConfigError} listing every problem */
export async function loadRegistryConfig(env: OriginEnv = process.env): Promise<RegistryConfig> {
  const problems: string[] = []
  const originKeys = await ring(env, ORIGIN_KEKS.name, problems)
  const edgeKeys = await ring(env, EDGE_KEKS.name, problems)
  const cloudflare = [CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_KV_NAMESPACE_ID, CLOUDFLARE_KV_API_TOKEN]
  const values = cloudflare.map((row) => readText(env, row))
  const baseUrl = readUrl(env, CLOUDFLARE_API_BASE_URL, problems) ?? CLOUDFLARE_API_BASE_URL.default
  const set = values.filter((value) => value !== null).length
  if (set > 0 && set < cloudflare.length) {
    const missing = cloudflare.filter((_, i) => values[i] === null).map((row) => row.name)
    problems.push(`${missing.join(', ')} not set: the publisher needs all three Cloudflare values`)
  }
  const [accountId, namespaceId, apiToken] = values as string[]
  const publishIntervalMs = readInt(env, CONNECTIONS_PUBLISH_INTERVAL_MS, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  const kv =
    set === cloudflare.length
      ? {
          accountId: accountId as string,
          namespaceId: namespaceId as string,
          apiToken: apiToken as string,
          baseUrl,
        }
      : null
  const localKvDir = readText(env, CONNECTIONS_LOCAL_KV_DIR)
  return { originKeys, edgeKeys, kv, localKvDir, publishIntervalMs }
}

/** ORIGIN_KEKS alone (the console's and the CLI's way in): null when unset. */
export async function loadRegistryKeys(env: OriginEnv = process.env): Promise<KeyRing | null> {
  return (await loadRegistryConfig(env)).originKeys
}
