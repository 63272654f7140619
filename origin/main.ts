/**
 * `npm run origin`: one origin process configured from the environment (see origin/config.ts).
 * Prints `{"msg":"origin listening","url":...}` on stdout once it accepts requests, and exits 0
 * after a graceful close on SIGINT or SIGTERM (a second signal kills it at once).
 * @module
 */
import { ConfigError, loadConfig } from './config'
import { loadRegistryConfig, startRegistryPublisher } from './connections'
import { consoleDeps, loadConsoleConfig } from './console'
import { describeError } from './errors'
import { loadGmailConfig, startGmailPolling } from './gmail'
import { formatListeningLine } from './listening-line'
import { createLogger } from './log'
import { createMetrics } from './metrics'
import { loadRelayConfig, startOutboxRelay } from './outbox'
import { startOrigin } from './server'

/** Upper bound on the whole shutdown, in case something in it hangs. */
const SHUTDOWN_TIMEOUT_MS = 15_000

/**
 * The origin's, the Gmail poller's, the outbox relay's and the connection registry's settings,
 * every problem listed at once.
 */
async function loadSettings(env: NodeJS.ProcessEnv) {
  const problems: string[] = []
  const read = <T>(load: () => T): T | undefined => {
    try {
      return load()
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      problems.push(...err.problems)
      return undefined
    }
  }
  const config = read(() => loadConfig(env))
  const gmail = read(() => loadGmailConfig(env))
  const relay = read(() => loadRelayConfig(env))
  const consoleConfig = read(() => loadConsoleConfig(env))
  const registry = await loadRegistryConfig(env).catch((err: unknown) => {
    if (!(err instanceof ConfigError)) throw err
    problems.push(...err.problems)
    return undefined
  })
  if (!config || gmail === undefined || relay === undefined || !consoleConfig || !registry) {
    throw new ConfigError(problems)
  }
  return { config, gmail, relay, consoleConfig, registry }
}

async function main(): Promise<void> {
  let settings: Awaited<ReturnType<typeof loadSettings>>
  try {
    settings = await loadSettings(process.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(
      `${JSON.stringify({ level: 'error', msg: 'invalid configuration', problems: err.problems })}\n`,
    )
    process.exit(2)
  }
  const { config, gmail: gmailConfig, relay: relayConfig } = settings
  const logger = createLogger({ level: config.logLevel })
  const metrics = createMetrics()
  const origin = await startOrigin(config, {
    logger,
    metrics,
    console: consoleDeps({
      config: settings.consoleConfig,
      env: process.env,
      relay: relayConfig,
      gmail: gmailConfig,
      logger,
    }),
    connections: { originKeys: settings.registry.originKeys },
  })
  // Off unless GMAIL_* are set; a failing poll is logged and retried, it never stops the origin.
  const gmail = gmailConfig
    ? startGmailPolling({
        gmail: gmailConfig,
        origin: config,
        env: process.env,
        logger,
        registry: metrics.registry,
      })
    : null
  // Off unless DOWNSTREAM_URL is set: then outbox rows stay unprocessed for another consumer.
  const relay = relayConfig
    ? startOutboxRelay({
        relay: relayConfig,
        origin: config,
        logger,
        registry: metrics.registry,
      })
    : null
  if (!relay) logger.info('outbox relay off: DOWNSTREAM_URL is not set')
  // Off unless ORIGIN_KEKS, EDGE_KEKS and the Cloudflare KV settings are all set.
  const publisher = startRegistryPublisher(settings.registry, config, logger)

  const shutdown = (signal: NodeJS.Signals) => {
    logger.info('origin stopping', { signal })
    setTimeout(() => {
      logger.error('origin did not stop in time', { timeoutMs: SHUTDOWN_TIMEOUT_MS })
      process.exit(1)
    }, SHUTDOWN_TIMEOUT_MS).unref()
    Promise.all([gmail?.stop(), relay?.stop(), publisher?.stop(), origin.close()]).then(
      () => {
        logger.info('origin stopped', { signal })
        process.exit(0)
      },
      (err: unknown) => {
        logger.error('origin close failed', describeError(err))
        process.exit(1)
      },
    )
  }
  // `once`: a second signal falls through to Node's default and ends the process at once.
  process.once('SIGINT', shutdown)
  process.once('SIGTERM', shutdown)
  // Only now: whoever reads this line may stop the process at once, and must get a graceful close.
  process.stdout.write(`${formatListeningLine(origin.url)}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(
    `${JSON.stringify({ level: 'error', msg: 'origin failed to start', error: describeError(err) })}\n`,
  )
  process.exit(1)
})
