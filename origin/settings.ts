/**
 * The origin's settings, one table: the serving origin's rows (config.ts), the Gmail poller's
 * (gmail/config.ts), the outbox relay's and its retry policy's (outbox/config.ts,
 * failures/policy.ts) and the claim settings the poller reads as the Worker does
 * (claims/settings.ts), the console's (console/settings.ts) and the connection registry's
 * (connections/settings.ts). The parsers read through these
 * rows; `npm run dev` routes variables by this table and test/local/settings-docs.test.ts checks
 * docs/configuration.md's "Origin" table against it.
 * @module
 */
import { CLAIM_SETTINGS } from '../claims/settings'
import { type SettingRow, settingTable } from '../shared/settings'
import { CORE_SETTINGS } from './config'
import { REGISTRY_SETTINGS } from './connections/settings'
import { CONSOLE_SETTINGS } from './console/settings'
import { GMAIL_SETTINGS } from './gmail/config'
import { RELAY_SETTINGS } from './outbox/config'

export const ORIGIN_SETTINGS: readonly SettingRow[] = settingTable(
  CORE_SETTINGS,
  GMAIL_SETTINGS,
  RELAY_SETTINGS,
  CLAIM_SETTINGS,
  CONSOLE_SETTINGS,
  REGISTRY_SETTINGS,
)
