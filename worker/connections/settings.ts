/**
 * The connection registry's rows of the Worker's settings table (worker/settings.ts): the key
 * ring that opens the secrets the origin sealed for the edge, and how long an isolate keeps a
 * connection it read from KV. The KV binding itself (CONNECTIONS) is wrangler.toml's.
 * @module
 */
import { setting } from '../../shared/settings'

export const EDGE_KEKS = setting({
  name: 'EDGE_KEKS',
  kind: 'string',
  secret: true,
  doc: "the key-encryption keys of the connections' edge secrets, id:base64key,older:…; the origin seals with the first",
})

export const CONNECTION_CACHE_SECONDS = setting({
  name: 'CONNECTION_CACHE_SECONDS',
  kind: 'int',
  secret: false,
  default: 30,
  min: 1,
  max: 300,
  doc: "how long an isolate keeps a connection read from KV (an unknown id: a fifth of it); what a change waits for on top of KV's own propagation",
})

export const CONNECTION_SETTINGS = [EDGE_KEKS, CONNECTION_CACHE_SECONDS] as const
