/**
 * `npm run dev` itself, end to end: with DATABASE_URL naming a database that does not exist yet and
 * REDIS_URL set, on free ports, it creates and migrates the database, brings up the stand-in, the
 * origin and wrangler dev, prints its URLs, serves a webhook, and on SIGINT stops everything.
 */
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import {
  freePort,
  GroupProcess,
  isListening as listening,
  signalGroup,
} from '../../local/processes'
import { REDIS_URL, scratch } from '../../local/services'
import { REPO_ROOT } from '../../local/stack'
import { telegramDelivery } from '../../local/vendor-deliveries'
import { send } from '../support/test-stack'

const run = scratch('dev')

afterAll(async () => {
  await run.remove()
})

describe('npm run dev', () => {
  it('comes up on the given ports, serves a webhook, and leaves nothing behind on SIGINT', async () => {
    const ports = { UPSTASH_PORT: 0, ORIGIN_PORT: 0, WORKER_PORT: 0 }
    for (const name of Object.keys(ports) as Array<keyof typeof ports>) {
      ports[name] = await freePort()
    }
    const telegramToken = `dev-test-telegram-${run.databaseName}`
    const operatorToken = `dev-test-operator-${run.databaseName}`
    const dev = new GroupProcess({
      name: 'npm run dev',
      command: process.execPath,
      args: ['--import', 'tsx', 'local/dev.ts'],
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        DATABASE_URL: run.databaseUrl,
        REDIS_URL,
        UPSTASH_PORT: String(ports.UPSTASH_PORT),
        ORIGIN_PORT: String(ports.ORIGIN_PORT),
        WORKER_PORT: String(ports.WORKER_PORT),
        TELEGRAM_SECRET_TOKEN: telegramToken,
        OPERATOR_TOKEN: operatorToken,
        REDIS_KEY_PREFIX: run.keyPrefix,
        LOG_LEVEL: 'warn',
      },
      secrets: [telegramToken, operatorToken],
      keepLines: 400,
    })
    try {
      await dev.waitForLine(
        (line) => (line.includes('dev stack is up') ? true : undefined),
        120_000,
      )
      // The summary's lines come after that one; the console's is among them.
      await dev.waitForLine((line) => (line.includes('/console') ? true : undefined), 10_000)
      const summary = dev.output(400)
      expect(summary).toContain(`http://127.0.0.1:${ports.WORKER_PORT}`)
      expect(summary).toContain(`http://127.0.0.1:${ports.ORIGIN_PORT}`)
      expect(summary).toContain(`http://127.0.0.1:${ports.UPSTASH_PORT}`)
      // The values from .dev.vars(.example) and the environment never show up in the output.
      expect(summary).not.toContain(telegramToken)
      expect(summary).not.toContain(operatorToken)
      // The console's URL, and a first sign-in with the operator token.
      const consoleUrl = `http://127.0.0.1:${ports.ORIGIN_PORT}/console`
      expect(summary).toContain(consoleUrl)
      const signIn = await fetch(`${consoleUrl}/login`, {
        method: 'POST',
        body: new URLSearchParams({ token: operatorToken }),
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      })
      expect(signIn.status).toBe(303)
      expect(signIn.headers.get('set-cookie')).toMatch(/^console_session=.+HttpOnly/)
      expect(summary).not.toMatch(/dev-origin-shared-secret|dev-upstash-token/)

      const delivery = telegramDelivery({ secret: telegramToken, text: 'through npm run dev' })
      for (let i = 0; i < 2; i++) {
        expect(await send(await delivery.request(`http://127.0.0.1:${ports.WORKER_PORT}`))).toBe(
          200,
        )
      }
      const dbUrl = run.databaseUrl
      const client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
      try {
        const { rows } = await client.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM messages WHERE body = 'through npm run dev'",
        )
        expect(rows[0]?.n).toBe(1)
      } finally {
        await client.end()
      }

      // Ctrl-C: SIGINT to the group, as a terminal does.
      signalGroup(dev.pid, 'SIGINT')
      const exit = await Promise.race([
        dev.exited,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('npm run dev did not stop within 40 s')), 40_000),
        ),
      ])
      expect(exit.code).toBe(0)
      expect(dev.output(10)).toMatch(/stopped\./)
      for (const port of Object.values(ports)) expect(await listening(port)).toBe(false)
    } finally {
      await dev.stop({ graceMs: 5_000 })
    }
  })
})
