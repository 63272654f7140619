/**
 * Edge connection records for the connections phase, sealed in the publisher's format
 * (shared/envelope.ts under EDGE_KEKS, contract `secretAad`): a typical record of every channel
 * kind (the bytes figure, sealed by `seal` itself), and many LINE bots (the 100,000), sealed by
 * {@link fastSeal}: the same envelope (a data key of its own per value, AES-KW-wrapped, AES-GCM
 * with a random IV) with node:crypto's synchronous calls, some 30 times quicker than WebCrypto's
 * three promises a value; test/bench/connection-figures.test.ts opens its output with `open`.
 * They are written into the Worker's KV from inside workerd (the verify-only Worker's
 * `POST /bench/connections`), 200 puts a request, a few requests in flight.
 * @module
 */
import { createCipheriv, randomBytes } from 'node:crypto'
import {
  type ConnectionChannel,
  type EdgeConnection,
  kvKeys,
  newConnectionId,
  secretAad,
} from '../contract/connection'
import { type KeyRing, seal } from '../shared/envelope'

export interface RecordSpec {
  channel: ConnectionChannel
  account: string
  ids?: string[]
  settings?: Record<string, string>
  status?: 'active' | 'disabled'
  version?: number
  /** field → the secret's value. */
  secrets: Record<string, string>
  id?: string
}

export async function sealedRecord(ring: KeyRing, spec: RecordSpec): Promise<EdgeConnection> {
  const id = spec.id ?? newConnectionId()
  const secrets = await Promise.all(
    Object.entries(spec.secrets).map(async ([field, value]) => ({
      field,
      kid: 'k1',
      notAfter: null,
      sealed: await seal(ring, value, secretAad(id, field, 'k1')),
    })),
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

const hex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) =>
    b.toString(16).padStart(2, '0'),
  ).join('')
const digits = (n: number) => `${1 + (hex(1).charCodeAt(0) % 9)}${'7'.repeat(n - 1)}`

/**
 * One connection of each kind that has secrets or ids, as a vendor issues them: one id where the
 * kind has ids, secrets of their usual length (32 hex characters for most; WeChat's
 * EncodingAESKey 43; an API key 43 of base64url).
 */
export function typicalSpecs(): RecordSpec[] {
  return [
    {
      channel: 'slack',
      account: 'A0ABCDE1234',
      ids: ['T0ABCDE1234'],
      secrets: { signing_secret: hex(16) },
    },
    { channel: 'twilio', account: `AC${hex(16)}`, secrets: { auth_token: hex(16) } },
    { channel: 'telegram', account: '7100000001', secrets: { secret_token: hex(16) } },
    {
      channel: 'whatsapp-cloud',
      account: digits(15),
      ids: [digits(15)],
      secrets: { app_secret: hex(16) },
    },
    {
      channel: 'messenger',
      account: digits(15),
      ids: [digits(15)],
      secrets: { app_secret: hex(16) },
    },
    {
      channel: 'instagram',
      account: digits(15),
      ids: [digits(17)],
      secrets: { app_secret: hex(16) },
    },
    { channel: 'line', account: `U${hex(16)}`, secrets: { channel_secret: hex(16) } },
    {
      channel: 'wechat',
      account: `gh_${hex(6)}`,
      settings: { app_id: `wx${hex(8)}` },
      secrets: { token: hex(16), aes_key: hex(22).slice(0, 43) },
    },
    {
      channel: 'api',
      account: 'tenant-one',
      ids: ['tenant-one'],
      secrets: { api_key: hex(22).slice(0, 43) },
    },
  ]
}

/** A LINE bot the bench sends for: its record, and the secret its deliveries are signed with. */
export interface LineBot {
  record: EdgeConnection
  secret: string
}

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url')
/** RFC 3394's default initial value: what WebCrypto's AES-KW uses. */
const KW_IV = Buffer.from('A6A6A6A6A6A6A6A6', 'hex')

/**
 * `seal` of shared/envelope.ts, synchronously: `v1.<kekId>.<wrapped>.<iv>.<ciphertext>`, the data
 * key wrapped with the KEK of `keks` (`id:<32 bytes base64url>`, its first entry).
 */
export function fastSeal(keks: string, plaintext: string, aad: string): string {
  const [entry = ''] = keks.split(',')
  const colon = entry.indexOf(':')
  const kek = Buffer.from(entry.slice(colon + 1), 'base64url')
  const dek = randomBytes(32)
  const wrap = createCipheriv('id-aes256-wrap', kek, KW_IV)
  const wrapped = Buffer.concat([wrap.update(dek), wrap.final()])
  const iv = randomBytes(12)
  const gcm = createCipheriv('aes-256-gcm', dek, iv)
  gcm.setAAD(Buffer.from(aad, 'utf8'))
  const ciphertext = Buffer.concat([gcm.update(plaintext, 'utf8'), gcm.final(), gcm.getAuthTag()])
  return ['v1', entry.slice(0, colon), b64url(wrapped), b64url(iv), b64url(ciphertext)].join('.')
}

/** `count` LINE bots, each with a secret of its own sealed for its own record id. */
export function lineBots(keks: string, count: number): LineBot[] {
  return Array.from({ length: count }, () => {
    const id = newConnectionId()
    const secret = hex(16)
    const aad = secretAad(id, 'channel_secret', 'k1')
    const record: EdgeConnection = {
      v: 1,
      id,
      channel: 'line',
      account: `U${hex(16)}`,
      ids: [],
      settings: {},
      status: 'active',
      version: 1,
      secrets: [
        { field: 'channel_secret', kid: 'k1', notAfter: null, sealed: fastSeal(keks, secret, aad) },
      ],
    }
    return { record, secret }
  })
}

/** Puts per request of the fill (the verify-only Worker takes up to 1,000; 1,000 at once reset connections under load). */
const PUTS_PER_REQUEST = 200

/**
 * One fill request, tried up to three times: under load Miniflare now and then resets a
 * connection, and a put again of the same value changes nothing.
 */
async function putBatch(fillUrl: string, body: string, count: number): Promise<void> {
  let last: unknown
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const response = await fetch(fillUrl, {
        method: 'POST',
        body,
        signal: AbortSignal.timeout(60_000),
      })
      const answer = (await response.json()) as { put?: number }
      if (response.ok && answer.put === count) return
      last = new Error(`the fill answered ${response.status}`)
    } catch (err) {
      last = err
    }
  }
  throw new Error(`connections: a fill request failed 3 times: ${(last as Error)?.message}`)
}

/** Every record put under `conn:<id>` through `fillUrl`, `inFlight` requests at once. */
export async function putRecords(
  fillUrl: string,
  records: readonly EdgeConnection[],
  inFlight = 8,
): Promise<void> {
  let next = 0
  const lane = async () => {
    while (next < records.length) {
      const batch = records.slice(next, next + PUTS_PER_REQUEST)
      next += batch.length
      const body = JSON.stringify(batch.map((r) => [kvKeys.connection(r.id), JSON.stringify(r)]))
      await putBatch(fillUrl, body, batch.length)
    }
  }
  await Promise.all(Array.from({ length: inFlight }, lane))
}
