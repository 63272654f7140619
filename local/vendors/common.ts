/**
 * What every vendor's fixtures share (vendor-deliveries.ts gathers them): the tests' secrets, a
 * forged one, fresh ids, and the shape of a fresh signed delivery.
 * @module
 */
import { readBoundedBody } from '../../shared/body'
import { toHex } from '../../shared/crypto'
import type { RequestParts } from '../../worker/channels/types'

/** What a gateway is configured with, and what its deliveries are signed with. */
export interface VendorSecrets {
  slack: string
  twilio: string
  telegram: string
  /** The bot of the bare `/webhooks/telegram` path (TELEGRAM_BOT_ID). */
  telegramBotId: string
  /** ORIGIN_SHARED_SECRET. */
  origin: string
}

/** The tests' secrets (vitest.workers.config.ts writes the same values out: keep them equal). */
export const TEST_SECRETS = {
  slack: 'test-slack-signing-secret',
  twilio: 'test-twilio-auth-token',
  telegram: 'test-telegram-secret-token',
  telegramBotId: '424242',
  origin: 'test-origin-shared-secret',
} as const satisfies VendorSecrets

/** What a forged delivery is signed with: no gateway is configured with it. */
export const FORGED_SECRET = 'not-the-configured-secret'

export const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/** `bytes` random bytes as hex. */
export function randomHex(bytes: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(bytes)))
}

/** 16 random hex characters: ids unique to a test run. */
export const randomId = (): string => randomHex(8)

export const randomBelow = (n: number) => Math.floor(Math.random() * n)

/** One vendor delivery and the keys the gateway must derive from it. */
export interface SignedDelivery {
  /** `messages.channel` of its row. */
  channel:
    | 'slack'
    | 'whatsapp'
    | 'sms'
    | 'telegram'
    | 'line'
    | 'messenger'
    | 'instagram'
    | 'wechat'
    | 'teams'
  /** `messages.channel_message_id` of its row. */
  messageKey: string
  /** The Redis claim key (without REDIS_KEY_PREFIX). */
  deliveryKey: string
  /**
   * One attempt at the gateway at `base`, signed now: every call is the same delivery again (a
   * vendor retry); a Slack retry carries `x-slack-retry-num` and `x-slack-retry-reason`.
   */
  request(base: string, attempt?: { retry: number; reason: string }): Promise<Request>
}

/** How a fresh delivery is signed. */
export interface Signing {
  /** The vendor secret it is signed with. @default the test secret of its vendor */
  secret?: string
  /** Signed with {@link FORGED_SECRET}: the gateway must refuse it. */
  forged?: boolean
}

/** What a verifier sees of a request (the body read the way the gateway reads it). */
export async function partsOf(request: Request): Promise<RequestParts> {
  return {
    url: request.url,
    headers: request.headers,
    body: await readBoundedBody(request, 1024 * 1024),
  }
}
