/**
 * Points `@neondatabase/serverless` at the local WebSocket proxy (local/neon-ws-proxy.ts) for
 * in-process users of the driver: the stand-in tests, the e2e tests that look into the database,
 * and the benchmark. The origin reads `NEON_WS_PROXY` itself and applies the same settings.
 *
 * The settings are process-global (the driver keeps them on `neonConfig`); against real Neon none
 * of this applies, its defaults are right.
 * @module
 */
import { neonConfig } from '@neondatabase/serverless'
import ws from 'ws'

/**
 * @param wsProxy `host:port/v2` of the local proxy (the `wsProxy` of a running proxy).
 * @example configureNeonForLocalProxy(proxy.wsProxy)
 */
export function configureNeonForLocalProxy(wsProxy: string): void {
  neonConfig.webSocketConstructor = ws
  // The local proxy has no TLS.
  neonConfig.useSecureWebSocket = false
  // Pipelined startup with trust auth is refused ("invalid frontend message type 112"), and it
  // wedges pglite-socket.
  neonConfig.pipelineConnect = false
  neonConfig.wsProxy = (host, port) => `${wsProxy}?address=${host}:${port}`
}
