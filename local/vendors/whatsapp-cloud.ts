/**
 * WhatsApp Cloud API (Meta) fixtures: one POST carries a batch, signed as Meta signs it.
 * @module
 */
import { whatsappSignature } from '../../worker/channels/whatsapp-cloud'
import { FORGED_SECRET, type Signing } from './common'

/** WHATSAPP_APP_SECRET and WHATSAPP_VERIFY_TOKEN of the tests' gateways (Meta's channel). */
export const WA_TEST_SECRET = 'test-whatsapp-app-secret'
export const WA_VERIFY_TOKEN = 'test-whatsapp-verify-token'

/** A text message as Meta shapes it. */
export function waText(id: string, text: string, from = '16505551234'): Record<string, unknown> {
  return { from, id, timestamp: '1749416383', type: 'text', text: { body: text } }
}

/** One change of a batch: a phone number's messages and statuses. */
export interface WaChange {
  phoneNumberId: string
  messages?: unknown[]
  statuses?: unknown[]
}

/** A webhook body with one entry per WABA and one change per phone number, as Meta batches. */
export function waBatch(changes: WaChange[], waba = '102290129340398'): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: waba,
        changes: changes.map((change) => ({
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            metadata: {
              display_phone_number: '15550783881',
              phone_number_id: change.phoneNumberId,
            },
            contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }],
            ...(change.messages ? { messages: change.messages } : {}),
            ...(change.statuses ? { statuses: change.statuses } : {}),
          },
        })),
      },
    ],
  }
}

/** A POST signed the way Meta signs it: the exact bytes sent, under the app secret. */
export async function metaRequest(
  url: string,
  body: Record<string, unknown> | string,
  secret = WA_TEST_SECRET,
): Promise<Request> {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': await whatsappSignature(secret, text),
    },
    body: text,
  })
}

/** A WhatsApp Cloud POST: Meta's signature. */
export const waRequest = metaRequest

/**
 * One Meta POST of `changes` (messages and statuses per phone number), signed with the test app
 * secret (or forged); every `request` is the same POST again, as Meta resends a whole batch.
 */
export function whatsappCloudPost(
  changes: WaChange[],
  signing: Signing = {},
): { request(base: string): Promise<Request> } {
  const body = waBatch(changes)
  const secret = signing.forged ? FORGED_SECRET : (signing.secret ?? WA_TEST_SECRET)
  return { request: (base) => waRequest(`${base}/webhooks/whatsapp-cloud`, body, secret) }
}
