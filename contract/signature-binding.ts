/**
 * A one-time signature's binding to the body it first came with, kept by the origin
 * (`POST /v1/signature-bindings`, table `signature_bindings`) beside the Worker's Redis copy
 * (worker/signature-once.ts): the request the Worker sends, and the answer it reads. The key is a
 * formatted delivery key (`wechat-signature:<account>:<timestamp>.<nonce>`), the hash the body's.
 * @module
 */
import * as v from 'valibot'

/** Bounds of a binding: keys are short formatted delivery keys, hashes a few hex digits. */
export const BINDING_LIMITS = { keyBytes: 256, hashChars: 64, maxTtlSeconds: 3_600 } as const

export const SignatureBindingSchema = v.object({
  key: v.pipe(v.string(), v.minLength(1), v.maxBytes(BINDING_LIMITS.keyBytes)),
  hash: v.pipe(v.string(), v.regex(/^[0-9a-f]{8,64}$/)),
  ttlSeconds: v.pipe(
    v.number(),
    v.integer(),
    v.minValue(1),
    v.maxValue(BINDING_LIMITS.maxTtlSeconds),
  ),
})

export type SignatureBinding = v.InferOutput<typeof SignatureBindingSchema>

/** `bound`: first use, or the body it is bound to again; `other`: bound to another body. */
export type BindAnswer = 'bound' | 'other'

/** The origin's answer `{ binding: 'bound' | 'other' }` read back; null when it is neither. */
export function bindAnswer(json: Record<string, unknown>): BindAnswer | null {
  return json.binding === 'bound' || json.binding === 'other' ? json.binding : null
}
