/**
 * The console as an operator uses it, in a real browser: sign in, read the overview's counts,
 * look an id up, replay a failure. Locators by role, label and visible text; no knowledge of the
 * server beyond its URLs.
 */
import type { Page } from 'playwright-core'

export class ConsolePage {
  constructor(
    readonly page: Page,
    readonly base: string,
  ) {}

  async signIn(token: string): Promise<void> {
    await this.page.goto(`${this.base}/console/login`)
    await this.page.getByLabel('Token').fill(token)
    await this.page.getByRole('button', { name: 'Sign in' }).click()
    await this.page.waitForURL(`${this.base}/console`)
  }

  /** The overview's count in `category` for `channel` (0 when the channel has no row yet). */
  async count(channel: string, category: string): Promise<number> {
    await this.page.goto(`${this.base}/console`)
    const cell = this.page.locator(`tr[data-channel="${channel}"] td[data-category="${category}"]`)
    if ((await cell.count()) === 0) return 0
    return Number.parseInt((await cell.first().textContent()) ?? '0', 10)
  }

  /** A number of the overview's health row: `spooled`, `retried` or `dead` (last hour). */
  async health(name: 'spooled' | 'retried' | 'dead'): Promise<number> {
    await this.page.goto(`${this.base}/console`)
    const cell = this.page.locator(`td[data-health="${name}"]`)
    return Number.parseInt((await cell.first().textContent())?.trim() ?? '', 10)
  }

  async lookup(id: string): Promise<void> {
    await this.page.goto(`${this.base}/console/lookup`)
    await this.page.getByRole('searchbox').fill(id)
    await this.page.getByRole('button', { name: 'Look up' }).click()
    await this.page.waitForURL(/\/console\/lookup\?q=/)
  }
}
