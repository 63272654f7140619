/**
 * The console's wiring for `npm run origin` (origin/main.ts): its settings, the Worker's claim
 * store (lookup, the stats hash, and a replayed event's claim set `done`), and what a replay
 * needs (failures/replay-service.ts), as the CLI has it.
 * @module
 */
import { claimStore, readClaimSettings } from '../../claims'
import type { OriginEnv } from '../config'
import { readRetryPolicy } from '../failures/policy'
import { gatewayReplayOf } from '../failures/unrecognized'
import type { GmailConfig } from '../gmail/config'
import type { Logger } from '../log'
import type { RelayConfig } from '../outbox/config'
import type { ConsoleDeps } from './app'
import type { ConsoleConfig } from './settings'

export { loadConsoleConfig } from './settings'

export function consoleDeps(options: {
  config: ConsoleConfig
  env: OriginEnv
  relay: RelayConfig | null
  gmail: GmailConfig | null
  logger: Logger
}): Omit<ConsoleDeps, 'db' | 'logger'> {
  const warnings: string[] = []
  const claims = claimStore(readClaimSettings(options.env, warnings))
  const retry = options.relay?.retry ?? readRetryPolicy(options.env, warnings)
  const gateway = gatewayReplayOf(options.env, warnings)
  for (const warning of warnings) options.logger.warn('console config', { warning })
  return {
    config: options.config,
    claims,
    replay: {
      downstream: options.relay?.downstream ?? null,
      retry,
      gmail: options.gmail,
      env: options.env,
      claims,
      gateway,
    },
  }
}
