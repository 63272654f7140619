/**
 * `npm run origin`: one origin process configured from the environment (see origin/config.ts).
 * Prints `{"msg":"origin listening","url":...}` on stdout once it accepts requests, and exits 0
 * after a graceful close on SIGINT or SIGTERM (a second signal kills it at once).
 * @module
 */
import { ConfigError, loadConfig } from './config'
import { describeError } from './errors'
import { formatListeningLine } from './listening-line'
import { createLogger } from './log'
import { startOrigin } from './server'

/** Upper bound on the whole shutdown, in case something in it hangs. */
const SHUTDOWN_TIMEOUT_MS = 15_000

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(
      `${JSON.stringify({ level: 'error', msg: 'invalid configuration', problems: err.problems })}\n`,
    )
    process.exit(2)
  }
  const logger = createLogger({ level: config.logLevel })
  const origin = await startOrigin(config, { logger })
  process.stdout.write(`${formatListeningLine(origin.url)}\n`)

  const shutdown = (signal: NodeJS.Signals) => {
    logger.info('origin stopping', { signal })
    setTimeout(() => {
      logger.error('origin did not stop in time', { timeoutMs: SHUTDOWN_TIMEOUT_MS })
      process.exit(1)
    }, SHUTDOWN_TIMEOUT_MS).unref()
    origin.close().then(
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
}

main().catch((err: unknown) => {
  process.stderr.write(
    `${JSON.stringify({ level: 'error', msg: 'origin failed to start', error: describeError(err) })}\n`,
  )
  process.exit(1)
})
