/**
 * The one set of vendor delivery fixtures, one file per vendor under local/vendors/ and gathered
 * here: the payloads each vendor (and email, and our own API's clients) sends, signed the way each
 * vendor signs them (with the gateway's own signers, worker/channels/*, which the unit tests pin
 * to the vendors' documented vectors), and fresh signed deliveries that know the keys the gateway
 * must derive from them: the delivery key it claims in Redis and the message key of the row. The
 * bindings of a gateway that takes them all ({@link vendorBindings}) are here too.
 *
 * Used by the Node tests, the tests inside workerd, the fault suite, the soak, the bench and
 * local/send-webhook.ts. Web APIs only (Request, Web Crypto through the signers and
 * shared/crypto.ts, crypto.getRandomValues): it runs in workerd as it runs in Node.
 *
 * The payload builders ({@link slackMessageEvent}, {@link twilioParams}, {@link telegramUpdate},
 * {@link rawEmail}) have fixed defaults that the unit tests pin; the fresh deliveries
 * ({@link slackDelivery}, {@link twilioDelivery}, {@link telegramDelivery}) pick new ids for
 * whatever they are not given.
 * @module
 */
import { API_TEST_KEY_SHA256, API_TEST_TENANT } from './vendors/api'
import { TEST_SECRETS, type VendorSecrets } from './vendors/common'
import { LINE_TEST_SECRET } from './vendors/line'
import { META_TEST_SECRET, META_VERIFY_TOKEN } from './vendors/meta-messaging'
import { WECHAT_TEST_BINDINGS } from './vendors/wechat'
import { WA_TEST_SECRET, WA_VERIFY_TOKEN } from './vendors/whatsapp-cloud'

export * from './vendors/api'
export * from './vendors/common'
export * from './vendors/email'
export * from './vendors/line'
export * from './vendors/meta-messaging'
export * from './vendors/slack'
export * from './vendors/teams'
export * from './vendors/telegram'
export * from './vendors/twilio'
export * from './vendors/wechat'
export * from './vendors/whatsapp-cloud'

/**
 * The Worker bindings under which a gateway accepts deliveries signed with `secrets` (the test
 * secrets: WhatsApp Cloud's, LINE's, Messenger's and Instagram's too, and WeChat's two test
 * accounts).
 */
export function vendorBindings(secrets: VendorSecrets = TEST_SECRETS): Record<string, string> {
  return {
    SLACK_SIGNING_SECRET: secrets.slack,
    TWILIO_AUTH_TOKEN: secrets.twilio,
    TELEGRAM_SECRET_TOKEN: secrets.telegram,
    TELEGRAM_BOT_ID: secrets.telegramBotId,
    ...(secrets === TEST_SECRETS
      ? {
          WHATSAPP_APP_SECRET: WA_TEST_SECRET,
          WHATSAPP_VERIFY_TOKEN: WA_VERIFY_TOKEN,
          API_KEYS: JSON.stringify({ [API_TEST_KEY_SHA256]: API_TEST_TENANT }),
          LINE_CHANNEL_SECRET: LINE_TEST_SECRET,
          MESSENGER_APP_SECRET: META_TEST_SECRET,
          MESSENGER_VERIFY_TOKEN: META_VERIFY_TOKEN,
          INSTAGRAM_APP_SECRET: META_TEST_SECRET,
          INSTAGRAM_VERIFY_TOKEN: META_VERIFY_TOKEN,
          ...WECHAT_TEST_BINDINGS,
        }
      : {}),
  }
}
