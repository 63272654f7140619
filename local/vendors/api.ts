/**
 * Fixtures of our own API (`POST /v1/messages`): its test key and a client's message.
 * @module
 */
import { FORGED_SECRET, randomId } from './common'

/**
 * The public API's key of the tests' gateways, for tenant {@link API_TEST_TENANT}; API_KEYS holds
 * only its SHA-256 ({@link API_TEST_KEY_SHA256}, test/api/api-auth.test.ts pins the two together).
 */
export const API_TEST_KEY = 'test-api-key'
export const API_TEST_KEY_SHA256 =
  '4c806362b613f7496abf284146efd31da90e4b16169fe001841ca17290f427c4'
export const API_TEST_TENANT = 'test-tenant'

/** One user action of an API client: the same Idempotency-Key on every attempt. */
export interface ApiDelivery {
  channel: 'api'
  /** `messages.channel_message_id` of its row (a plain key is its own part). */
  messageKey: string
  /** The Idempotency-Key, unquoted. */
  key: string
  /** One attempt at the gateway at `base`: the same request again (a client retry). */
  request(base: string): Promise<Request>
}

export interface ApiMessageFields {
  /** `[A-Za-z0-9_-]`, at most 64 (then it is its own message key part). @default a fresh one */
  key?: string
  text?: string
  customerId?: string
  /** Sent with a key no gateway is configured with: 401, nothing written. */
  forged?: boolean
}

export function apiDelivery(fields: ApiMessageFields = {}): ApiDelivery {
  const key = fields.key ?? `k-${randomId()}`
  const body = JSON.stringify({
    customer: { id: fields.customerId ?? 'api-customer-1' },
    text: fields.text ?? `hello ${key}`,
  })
  return {
    channel: 'api',
    key,
    messageKey: `${API_TEST_TENANT}:${key}`,
    request: async (base) =>
      new Request(`${base}/v1/messages`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${fields.forged ? FORGED_SECRET : API_TEST_KEY}`,
          'content-type': 'application/json',
          'idempotency-key': `"${key}"`,
        },
        body,
      }),
  }
}
