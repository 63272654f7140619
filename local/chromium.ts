/**
 * Debian's Chromium driven by playwright-core (no browser download: this machine, like CI, has
 * no network but the package registries). `.ci/run` installs the `chromium` package when it is
 * missing; CHROMIUM_PATH points elsewhere. Launched headless with the flags a root, offline
 * Chromium needs; playwright-core gives each launch a fresh temporary profile of its own (it
 * refuses a `--user-data-dir` flag) and removes it on close. Used by the console's end-to-end test and by
 * `npm run console:screenshots`.
 * @module
 */
import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
]

export interface RunningBrowser {
  browser: Browser
  /** Closes the browser (and playwright-core removes its profile). */
  close(): Promise<void>
}

export async function launchChromium(): Promise<RunningBrowser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM_PATH}: install Debian's package (apt-get install -y chromium; .ci/run does) or set CHROMIUM_PATH`,
    )
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: FLAGS,
    timeout: 60_000,
  })
  return {
    browser,
    async close() {
      await browser.close().catch(() => {})
    },
  }
}
