/**
 * A connection's edge record as the origin's publisher writes it (shared/envelope.ts `seal` under
 * EDGE_KEKS, contract `secretAad`): Web APIs only, for the tests in workerd and in Node alike.
 * @module
 */
import {
  type ConnectionChannel,
  type EdgeConnection,
  newConnectionId,
  secretAad,
} from '../../../contract/connection'
import { importKeyRing, newKekEntry, seal } from '../../../shared/envelope'

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
