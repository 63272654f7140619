/**
 * WhatsApp Cloud API vectors and examples: the signature vectors of vendor-protocols-2.md §1.2 (A
 * is Meta's own SDK vector) and Meta's documented example payloads (§1.9). Signed batches shaped
 * like them: local/vendor-deliveries.ts. Web APIs only: used by the Node tests and inside workerd.
 * @module
 */

/** Meta's documented text-message example, serialised compactly (vector B's body, 499 bytes). */
export const META_TEXT_EXAMPLE =
  '{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],"messages":[{"from":"16505551234","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","timestamp":"1749416383","type":"text","text":{"body":"Does it come in another color?"}}]},"field":"messages"}]}]}'

/** [name, secret, body, expected header]. */
export const WA_VECTORS: ReadonlyArray<readonly [string, string, string, string]> = [
  [
    "A (Meta's Node SDK)",
    'TEST_APP_SECRET',
    'test',
    'sha256=0c61947b610d4f45e65f3d680e26027121ec2413e77598bcb6cfc6e0d9888221',
  ],
  [
    "B (Meta's text example)",
    'my_app_secret_123',
    META_TEXT_EXAMPLE,
    'sha256=c5fba68f6e168e23630a30ad4c385ffbc5554bff8c4da179f29cf18383ee2f75',
  ],
  [
    'C1 (escaped unicode)',
    'my_app_secret_123',
    '{"text":{"body":"\\u00e4\\u00f6\\u00e5"}}',
    'sha256=067a98a59891d922fd31380f0e3a4370969909b459b0b41891c3772d978ffe6a',
  ],
  [
    'C2 (raw UTF-8)',
    'my_app_secret_123',
    '{"text":{"body":"äöå"}}',
    'sha256=f6758e2336fc6859ce8b90fce6dd5289661d0cd21997b9f931777ec875ad9d75',
  ],
]

/** Meta's documented image message (§1.9), the `messages[0]` of its example. */
export const META_IMAGE_MESSAGE = {
  from: '16505551234',
  id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
  timestamp: '1744344496',
  type: 'image',
  image: {
    caption: 'Taj Mahal',
    mime_type: 'image/jpeg',
    sha256: 'SfInY0gGKTsJlUWbwxC1k+FAD0FZHvzwfpvO0zX0GUI=',
    id: '1003383421387256',
    url: 'https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=133...',
  },
}

/** Meta's documented `sent` status (§1.9). */
export const META_SENT_STATUS = {
  id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA=',
  status: 'sent',
  timestamp: '1750030073',
  recipient_id: '16505551234',
  conversation: {
    id: '72b14d6bd5407799e66f64d1b338e567',
    expiration_timestamp: '1750116480',
    origin: { type: 'marketing' },
  },
  pricing: { billable: true, pricing_model: 'PMP', type: 'regular', category: 'marketing' },
}
