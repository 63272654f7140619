/**
 * Delivery keys: what one vendor delivery is, as Redis key material. Channels build them (the
 * Worker's channels/, and contract/email.ts for both email paths); the claim store (claims/)
 * prefixes them with the deployment's REDIS_KEY_PREFIX.
 * @module
 */

/**
 * `dedup:{namespace}:{scope}:{id}`. The namespace is the channel, or a channel-specific namespace
 * for deliveries that are not messages (Twilio status callbacks, Slack interactions), so the two
 * can never collide.
 */
export interface DeliveryKey {
  namespace: string
  /** Who owns the id: Slack app, Twilio account, Telegram bot, mailbox (the verified tenant). */
  scope: string
  /** How the scope is written in the key when not as itself (Twilio: a short tag of the account). */
  scopeTag?: string
  id: string
  /** True when the vendor id was missing and a hash of the payload stands in (logged). */
  fallback?: boolean
}

export function formatDeliveryKey(key: DeliveryKey): string {
  return `dedup:${key.namespace}:${key.scopeTag ?? key.scope}:${key.id}`
}
