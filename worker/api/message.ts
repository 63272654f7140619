/**
 * POST /v1/messages: the request body (valibot) and the `api` event it becomes. The event's
 * tenant is the API key's; its message key comes from the Idempotency-Key, so however often a
 * client sends one user action (and however long after the stored answer expired), it is one row.
 * @module
 */
import * as v from 'valibot'
import type { IdempotentCall } from '../../claims/idempotency'
import type { DeliveryKey } from '../../contract/delivery-key'
import {
  AttachmentSchema,
  IdentitySchema,
  type InboundEventDraft,
  LIMITS,
  StorableTimeSchema,
} from '../../contract/event'

const Text = (max: number) => v.pipe(v.string(), v.maxLength(max))

export const MessageRequestSchema = v.pipe(
  v.strictObject({
    customer: v.strictObject({
      /** Your id for the customer: the same id is the same customer. */
      id: IdentitySchema,
      name: v.optional(Text(LIMITS.name)),
      email: v.optional(v.pipe(v.string(), v.maxLength(320), v.email())),
    }),
    text: v.optional(Text(LIMITS.body)),
    attachments: v.optional(v.pipe(v.array(AttachmentSchema), v.maxLength(LIMITS.attachments))),
    /**
     * When the customer sent it (RFC 3339, a time Postgres stores: the event's own rule, so a 202
     * queued is never a message Postgres would refuse); absent: when the gateway received it.
     */
    sentAt: v.optional(StorableTimeSchema),
  }),
  v.check(
    (request) => Boolean(request.text) || (request.attachments?.length ?? 0) > 0,
    'text or an attachment is required',
  ),
)
export type MessageRequest = v.InferOutput<typeof MessageRequestSchema>

export type ParsedRequest = { ok: true; request: MessageRequest } | { ok: false; detail: string }

/** The body as a request; the detail names the field and the rule, never a value. */
export function parseMessageRequest(body: string): ParsedRequest {
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    return { ok: false, detail: 'the body is not JSON' }
  }
  const result = v.safeParse(MessageRequestSchema, json)
  if (result.success) return { ok: true, request: result.output }
  const issue = result.issues[0]
  const path = issue?.path?.map((p) => String(p.key)).join('.') || '(body)'
  // A check's message is ours (never a value); any other issue is named by its type.
  const rule = issue?.type === 'check' ? issue.message : issue?.type
  return { ok: false, detail: `${path}: ${rule ?? 'invalid'}` }
}

/** A key of these characters is its own message key part; any other is hashed. */
const PLAIN_KEY = /^[A-Za-z0-9_-]{1,64}$/

/** What the keys of a call are made from: its tenant and its Idempotency-Key. */
type KeyedCall = Pick<IdempotentCall, 'tenant' | 'key' | 'keyHash'>

/** The key's part of the message key: as sent when plain, else its hash. */
const keyPartOf = (call: Pick<IdempotentCall, 'key' | 'keyHash'>) =>
  PLAIN_KEY.test(call.key) ? call.key : `sha256:${call.keyHash}`

/** `{tenant}:{key}`, or `{tenant}:sha256:{hash of key}` (never the same: `:` is not plain). */
export function apiMessageKey(call: KeyedCall): string {
  return `${call.tenant}:${keyPartOf(call)}`
}

/**
 * The event's delivery key (`dedup:api:{tenant}:{key part}`): the name its spool message carries
 * (the claim is the Idempotency-Key's, worker/api/routes.ts). The event's own `deliveryKey` is
 * the same without `dedup:` (`api:{message key}`, docs/keys.md).
 */
export function apiDeliveryKey(call: KeyedCall): DeliveryKey {
  return { namespace: 'api', scope: call.tenant, id: keyPartOf(call) }
}

/** The event's `deliveryKey`: `api:{message key}` (docs/keys.md). */
export const apiEventKey = (call: KeyedCall) => `api:${apiMessageKey(call)}`

export function messageDraft(
  call: IdempotentCall,
  request: MessageRequest,
  receivedAt: Date,
): InboundEventDraft {
  const messageKey = apiMessageKey(call)
  return {
    kind: 'message',
    channel: 'api',
    tenant: call.tenant,
    deliveryKey: apiEventKey(call),
    messageKey,
    sender: {
      externalId: request.customer.id,
      ...(request.customer.name ? { displayName: request.customer.name } : {}),
    },
    body: request.text ?? '',
    occurredAt: request.sentAt ?? receivedAt.toISOString(),
    ...(request.attachments?.length ? { attachments: request.attachments } : {}),
    idempotency: {
      route: call.route,
      keyHash: call.keyHash,
      fingerprint: call.fingerprint,
      ttlSeconds: call.ttlSeconds,
    },
  }
}
