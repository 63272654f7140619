/**
 * The edge's side of the registry, as the tests inside workerd put it together: connections
 * sealed as the origin's publisher seals them (record.ts), put into the Worker's KV namespace
 * (CONNECTIONS) under the contract's keys, and the connection routes of each channel.
 * @module
 */
import { env } from 'cloudflare:workers'
import { type EdgeConnection, kvKeys } from '../../../contract/connection'
import type { Env } from '../../../worker/env'
import { GATEWAY, type Harness, harness } from '../../support/workerd/harness'
import { type ConnectionSpec, edgeRecord, TEST_EDGE_KEKS } from './record'

export {
  type ConnectionSpec,
  edgeRecord,
  OTHER_EDGE_KEKS,
  type SecretSpec,
  TEST_EDGE_KEKS,
} from './record'

export const kv = (): KVNamespace => (env as Env).CONNECTIONS as KVNamespace

/** Puts a connection into KV (and its index entries, as the publisher writes them). */
export async function putConnection(
  spec: ConnectionSpec,
  index: readonly string[] = [],
): Promise<EdgeConnection> {
  const record = await edgeRecord(spec)
  await kv().put(kvKeys.connection(record.id), JSON.stringify(record))
  for (const externalId of index) {
    await kv().put(kvKeys.index(spec.channel, externalId), record.id)
  }
  return record
}

/** A gateway with the tests' EDGE_KEKS (and any overrides): its own memo of connections. */
export function edgeHarness(overrides: Partial<Env> = {}): Harness {
  return harness({ EDGE_KEKS: TEST_EDGE_KEKS, ...overrides })
}

/** A channel's connection route at the test gateway. */
export const routeOf = (channel: string, id: string) => `${GATEWAY}/webhooks/${channel}/c/${id}`

/** A KV binding that fails every read (KV unreachable). */
export const brokenKv = {
  get: () => Promise.reject(new Error('kv unreachable')),
} as unknown as KVNamespace

/** A KV binding that never answers (KV slow past the Worker's bound). */
export const silentKv = {
  get: () => new Promise(() => {}),
} as unknown as KVNamespace

/** An RFC 3339 time `ms` from now. */
export const inMs = (ms: number) => new Date(Date.now() + ms).toISOString()
