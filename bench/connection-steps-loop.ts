/**
 * A memo miss's steps besides the KV get, as the Worker runs them on a record it has not read
 * before (worker/connections/reader.ts and config.ts), N times in one request to the verify-only
 * Worker (`POST /bench/connection-steps?step=&n=`, the record's JSON as the body), so that
 * bench/connection-breakdown.ts can time each from outside (the clock stands still inside
 * workerd while code runs): `parse` (JSON.parse and the contract's schema), `open` (its secret:
 * AES-KW unwrap + AES-GCM decrypt under EDGE_KEKS), `config` (the channel's config from the
 * record's variables, as config.ts builds it).
 * @module
 */
import * as v from 'valibot'
import { EdgeConnectionSchema, secretAad } from '../contract/connection'
import { importKeyRing, open } from '../shared/envelope'
import { line } from '../worker/channels/line'
import { CHANNEL_MAPPINGS } from '../worker/connections/variables'

export const CONNECTION_STEPS = ['parse', 'open', 'config'] as const
export type ConnectionStep = (typeof CONNECTION_STEPS)[number]

/** Runs `step` `n` times on the LINE record `text`; the same set-up whatever `n`. */
export async function runConnectionStep(
  keks: string | undefined,
  step: ConnectionStep,
  n: number,
  text: string,
): Promise<void> {
  const ring = await importKeyRing(keks)
  const record = v.parse(EdgeConnectionSchema, JSON.parse(text))
  const [secret] = record.secrets
  const mapping = CHANNEL_MAPPINGS.line
  if (!ring || !secret || !mapping) throw new Error('connection steps: no ring, secret or mapping')
  const aad = secretAad(record.id, secret.field, secret.kid)
  const value = await open(ring, secret.sealed, aad)
  for (let i = 0; i < n; i++) {
    if (step === 'parse') v.parse(EdgeConnectionSchema, JSON.parse(text))
    else if (step === 'open') await open(ring, secret.sealed, aad)
    else {
      const overlay: Record<string, string> = {}
      for (const name of mapping.clears) overlay[name] = ''
      Object.assign(
        overlay,
        mapping.variables(record, () => [value]),
      )
      if (!line.settings(overlay, []).ok) throw new Error('connection steps: no LINE config')
    }
  }
}
