/**
 * The operator console mounted at `/console` on an app of its own, as the origin mounts it, for
 * tests that talk to it with `app.request` (no claim store; replays without a downstream).
 * @module
 */
import { Hono } from 'hono'
import { type ConsoleDeps, createConsoleApp } from '../../origin/console/app'

/** What a replay needs when there is no downstream, no Gmail and a quick retry policy. */
export const TEST_REPLAY: ConsoleDeps['replay'] = {
  downstream: null,
  retry: { maxAttempts: 3, baseMs: 10, maxMs: 10 },
  gmail: null,
  env: {},
  claims: null,
  gateway: null,
}

export function mountedConsole(
  deps: Omit<ConsoleDeps, 'claims' | 'replay'> & Partial<Pick<ConsoleDeps, 'claims' | 'replay'>>,
): Hono {
  return new Hono().route(
    '/console',
    createConsoleApp({ claims: null, replay: TEST_REPLAY, ...deps }),
  )
}
