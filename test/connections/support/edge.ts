/**
 * The edge's side of the registry, as the tests inside workerd put it together: connections
 * sealed the way the origin's publisher seals them (shared/envelope.ts `seal` under EDGE_KEKS,
 * contract `secretAad`), put into the Worker's KV namespace (CONNECTIONS) under the contract's
 * keys, and the connection routes of each channel.
 * @module
 */
import { env } from 'cloudflare:workers'
import {
  type ConnectionChannel,
  type EdgeConnection,
  kvKeys,
  newConnectionId,
  secretAad,
} from '../../../contract/connection'
import { importKeyRing, newKekEntry, seal } from '../../../shared/envelope'
import type { Env } from '../../../worker/env'
import { GATEWAY, type Harness, harness } from '../../workers/support/harness'

/** The Worker's key ring in these tests: one KEK, made once per test run. */
export const TEST_EDGE_KEKS = newKekEntry('test')
/** Another ring: what it seals, the Worker cannot open. */
export const OTHER_EDGE_KEKS = newKekEntry('other')

export interface SecretSpec {
  field: string
  value: string
  kid?: string
  /** When it stops verifying (a replaced secret); default null (the current one). */
  notAfter?: string | null
}

export interface ConnectionSpec {
  channel: ConnectionChannel
  account: string
  ids?: string[]
  settings?: Record<string, string>
  status?: 'active' | 'disabled'
  version?: number
  secrets: SecretSpec[]
  id?: string
  /** Sealed under this ring instead of the Worker's. */
  keks?: string
}

export const kv = (): KVNamespace => (env as Env).CONNECTIONS as KVNamespace

/** The edge record of a spec, its secrets sealed as the publisher seals them. */
export async function edgeRecord(spec: ConnectionSpec): Promise<EdgeConnection> {
  const id = spec.id ?? newConnectionId()
  const ring = await importKeyRing(spec.keks ?? TEST_EDGE_KEKS)
  if (!ring) throw new Error('no ring')
  const secrets = await Promise.all(
    spec.secrets.map(async (secret, index) => {
      const kid = secret.kid ?? `k${index + 1}`
      return {
        field: secret.field,
        kid,
        notAfter: secret.notAfter ?? null,
        sealed: await seal(ring, secret.value, secretAad(id, secret.field, kid)),
      }
    }),
  )
  return {
    v: 1,
    id,
    channel: spec.channel,
    account: spec.account,
    ids: spec.ids ?? [],
    settings: spec.settings ?? {},
    status: spec.status ?? 'active',
    version: spec.version ?? 1,
    secrets,
  }
}

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
