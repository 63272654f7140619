/**
 * What the registry shows of a connection, to the API, the console and the CLI alike: everything
 * but its secrets, of which only the field, kid, fingerprint and times are shown.
 * @module
 */
import type { ConnectionChannel, ConnectionStatus } from '../../contract/connection'
import { isLive } from './secrets'
import type { ConnectionRecord } from './store'

export interface SecretView {
  field: string
  kid: string
  /** `sha256:` + the first 8 hex of the secret's SHA-256: enough to tell two apart, no more. */
  fingerprint: string
  /** RFC 3339; null for a current secret. */
  notAfter: string | null
  createdAt: string
  /** Whether it verifies now (a replaced one until its notAfter). */
  live: boolean
}

export interface EdgeView {
  /** The newest version the publisher wrote to KV, and when (null: not yet). */
  publishedVersion: number | null
  publishedAt: string | null
  /** A change waits to be written to KV. */
  pending: boolean
  /** The newest version an event said the edge verified with, and when it came. */
  seenVersion: number | null
  seenAt: string | null
}

export interface ConnectionView {
  id: string
  channel: ConnectionChannel
  account: string
  ids: string[]
  settings: Record<string, string>
  status: ConnectionStatus
  version: number
  createdAt: string
  updatedAt: string
  secrets: SecretView[]
  edge: EdgeView
}

export interface AuditView {
  action: string
  actor: string
  at: string
  /** Ids, kids, fingerprints, versions: never a secret. */
  detail: Record<string, unknown>
}

export interface ConnectionDetail extends ConnectionView {
  /** Newest first, at most 100. */
  audit: AuditView[]
}

export interface ConnectionPage {
  connections: ConnectionView[]
  /** Pass as `after` for the next page; null on the last. */
  next: string | null
}

const iso = (at: Date | null) => at?.toISOString() ?? null

export function toView(c: ConnectionRecord, nowMs: number): ConnectionView {
  return {
    id: c.id,
    channel: c.channel,
    account: c.account,
    ids: c.ids,
    settings: c.settings,
    status: c.status,
    version: c.version,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
    secrets: c.secrets.map((s) => ({
      field: s.field,
      kid: s.kid,
      fingerprint: s.fingerprint,
      notAfter: iso(s.notAfter),
      createdAt: s.createdAt.toISOString(),
      live: isLive(s, nowMs),
    })),
    edge: {
      publishedVersion: c.publishedVersion,
      publishedAt: iso(c.publishedAt),
      pending: c.publishPending,
      seenVersion: c.edgeVersion,
      seenAt: iso(c.edgeSeenAt),
    },
  }
}
