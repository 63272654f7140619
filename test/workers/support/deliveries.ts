/**
 * Fresh, correctly signed vendor deliveries for the workerd tests, one per channel. Calling
 * `make()` again builds the same delivery (a vendor replay); `deliveryKey` is the Redis claim key
 * the gateway must use for it (without the test's key prefix).
 */
import {
  slackMessageEvent,
  slackRequest,
  TEST_SECRETS,
  telegramRequest,
  telegramUpdate,
  twilioDeliveryKey,
  twilioParams,
  twilioRequest,
} from '../../unit/signed-requests'
import { GATEWAY } from './harness'

export const ACCOUNT = 'AC0123456789abcdef0123456789abcdef'
export const uniq = () => crypto.randomUUID().replaceAll('-', '').slice(0, 16)

export interface Delivery {
  make: () => Promise<Request>
  deliveryKey: string
}

export function slackDelivery(): Delivery {
  const eventId = `Ev${uniq()}`
  const ts = `${Date.now() / 1000}`
  return {
    make: () => slackRequest(`${GATEWAY}/webhooks/slack`, slackMessageEvent({ eventId, ts })),
    deliveryKey: `dedup:slack:A123ABC456:${eventId}`,
  }
}

export function whatsappDelivery(): Delivery {
  const sid = `SM${uniq()}${uniq()}`
  return {
    make: () => twilioRequest(`${GATEWAY}/webhooks/twilio`, twilioParams({ messageSid: sid })),
    deliveryKey: twilioDeliveryKey('wa', sid),
  }
}

export function telegramDelivery(): Delivery {
  const updateId = Math.floor(Math.random() * 2 ** 31)
  return {
    make: async () =>
      telegramRequest(
        `${GATEWAY}/webhooks/telegram`,
        telegramUpdate({ updateId, messageId: updateId }),
      ),
    deliveryKey: `dedup:telegram:${TEST_SECRETS.telegramBotId}:${updateId}`,
  }
}
