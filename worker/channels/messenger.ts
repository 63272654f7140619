/**
 * Facebook Messenger: Meta webhooks of `object: page` (meta-messaging.ts). The Page (`entry[].id`)
 * is the tenant; its app's secret vouches for it (MESSENGER_PAGES_BY_APP). Keys: docs/keys.md's
 * key table.
 * @module
 */
import { metaMessagingChannel } from './meta-messaging'

export const messenger = metaMessagingChannel({
  name: 'messenger',
  object: 'page',
  prefix: 'MESSENGER',
  ids: { name: 'MESSENGER_PAGES_BY_APP', noun: 'Page id' },
})
