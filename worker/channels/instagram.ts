/**
 * Instagram messaging: Meta webhooks of `object: instagram` (meta-messaging.ts). The Instagram
 * professional account (`entry[].id`) is the tenant; its app's secret vouches for it
 * (INSTAGRAM_ACCOUNTS_BY_APP). A message the user unsends arrives as `is_deleted`: a delete. Keys:
 * docs/keys.md's key table.
 * @module
 */
import { metaMessagingChannel } from './meta-messaging'

export const instagram = metaMessagingChannel({
  name: 'instagram',
  object: 'instagram',
  prefix: 'INSTAGRAM',
  ids: { name: 'INSTAGRAM_ACCOUNTS_BY_APP', noun: 'Instagram account id' },
})
