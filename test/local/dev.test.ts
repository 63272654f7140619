/**
 * `npm run dev` itself, end to end: with DATABASE_URL naming a database that does not exist yet and
 * REDIS_URL set, on free ports, it creates and migrates the database, brings up the stand-in, the
 * origin and wrangler dev, prints its URLs, serves a webhook, and on SIGINT stops everything.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { DEV_CONNECTIONS } from '../../local/dev-connections'
import { GroupProcess, signalGroup } from '../../local/processes'
import { freePort, isListening as listening } from '../../local/readiness'
import { REDIS_URL, scratch } from '../../local/services'
import { REPO_ROOT } from '../../local/stack'
import {
  randomBelow,
  telegramDelivery,
  telegramRequest,
  telegramUpdate,
} from '../../local/vendor-deliveries'
import { DEV_STACK_FILE } from '../../origin/failures/dev-stack'
import { newKekEntry } from '../../shared/envelope'
import { send } from '../support/test-stack'
import { queryRows, restartOriginAsPrinted, shell, tool } from './support/dev-tools'

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
    const devEnv = {
      ...process.env,
      DATABASE_URL: run.databaseUrl,
      REDIS_URL,
      UPSTASH_PORT: String(ports.UPSTASH_PORT),
      ORIGIN_PORT: String(ports.ORIGIN_PORT),
      WORKER_PORT: String(ports.WORKER_PORT),
      TELEGRAM_SECRET_TOKEN: telegramToken,
      OPERATOR_TOKEN: operatorToken,
      // The registry on, whatever the developer's .dev.vars says: the dev connections need it.
      ORIGIN_KEKS: newKekEntry('devtest-origin'),
      EDGE_KEKS: newKekEntry('devtest-edge'),
      REDIS_KEY_PREFIX: run.keyPrefix,
      LOG_LEVEL: 'warn',
    }
    const dev = new GroupProcess({
      name: 'npm run dev',
      command: process.execPath,
      args: ['--import', 'tsx', 'local/dev.ts'],
      cwd: REPO_ROOT,
      env: devEnv,
      secrets: [telegramToken, operatorToken],
      keepLines: 400,
    })
    try {
      // The summary's last line: the whole summary is out.
      await dev.waitForLine(
        (line) => (line.includes('Ctrl-C stops everything') ? true : undefined),
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

      // The dev connections: one per webhook channel in the registry, published into wrangler
      // dev's local KV by the origin's publisher, their routes printed; the seeded Telegram
      // connection's secret verifies on its route and the message is one row.
      const routes = [...summary.matchAll(/POST (\S+\/webhooks\/([a-z-]+)\/c\/(c_[a-z2-7]{26}))/g)]
      expect(new Set(routes.map((m) => m[2]))).toEqual(
        new Set(DEV_CONNECTIONS.map((c) => c.channel)),
      )
      const telegramRoute = routes.find((m) => m[2] === 'telegram')?.[1] as string
      const seededSecret = DEV_CONNECTIONS.find((c) => c.channel === 'telegram')?.secrets
        .secret_token?.[0] as string
      const update = telegramUpdate({
        updateId: randomBelow(2 ** 31),
        messageId: randomBelow(2 ** 31),
        text: 'through a dev connection',
      })
      expect(await send(await telegramRequest(telegramRoute, update, seededSecret))).toBe(200)
      expect(await send(await telegramRequest(telegramRoute, update, 'not-the-secret'))).toBe(401)
      const rowsOf = new pg.Client({ connectionString: run.databaseUrl })
      await rowsOf.connect()
      try {
        const { rows } = await rowsOf.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM messages WHERE body = 'through a dev connection'",
        )
        expect(rows[0]?.n).toBe(1)
      } finally {
        await rowsOf.end()
      }

      // The banner lists every route, WhatsApp Cloud's and the email handler's included.
      expect(summary).toContain(`/webhooks/whatsapp-cloud`)
      expect(summary).toContain('/cdn-cgi/handler/email')

      // send-webhook covers WhatsApp Cloud and says what became of each attempt.
      const wamid = `wamid.DEVTEST${run.databaseName}`
      const sent = await tool('local/send-webhook.ts', [
        'whatsapp-cloud',
        '--id',
        wamid,
        '--times',
        '2',
        '--url',
        `http://127.0.0.1:${ports.WORKER_PORT}`,
      ])
      expect(sent.stdout).toMatch(/1\/2 whatsapp-cloud -> 200 new/)
      expect(sent.stdout).toMatch(/2\/2 whatsapp-cloud -> 200 duplicate/)
      // And LINE, with the dev secret of .dev.vars.example: a message, then its unsend.
      const lineId = `5${Date.now()}`
      const url = ['--url', `http://127.0.0.1:${ports.WORKER_PORT}`]
      const lineSent = await tool('local/send-webhook.ts', [
        'line',
        '--message-id',
        lineId,
        '--times',
        '2',
        ...url,
      ])
      expect(lineSent.stdout).toMatch(/1\/2 line -> 200 new/)
      expect(lineSent.stdout).toMatch(/2\/2 line -> 200 duplicate/)
      const unsent = await tool('local/send-webhook.ts', [
        'line',
        '--message-id',
        lineId,
        '--unsend',
        ...url,
      ])
      expect(unsent.stdout).toMatch(/1\/1 line -> 200 new/)
      // Messenger and Instagram: a message twice, then its edit.
      for (const vendor of ['messenger', 'instagram']) {
        const mid = `m_devtest${Date.now()}`
        const twice = await tool('local/send-webhook.ts', [
          vendor,
          '--id',
          mid,
          '--times',
          '2',
          ...url,
        ])
        expect(twice.stdout).toMatch(new RegExp(`1/2 ${vendor} -> 200 new`))
        expect(twice.stdout).toMatch(new RegExp(`2/2 ${vendor} -> 200 duplicate`))
        const edited = await tool('local/send-webhook.ts', [vendor, '--id', mid, '--edit', ...url])
        expect(edited.stdout).toMatch(new RegExp(`1/1 ${vendor} -> 200 new`))
      }

      // Email, through wrangler's local Email Routing endpoint: send-webhook's own message twice,
      // then the README's curl with the shipped sample; each one row.
      const emailId = `dev-test-${Date.now()}@customer.example`
      const mailed = await tool('local/send-webhook.ts', [
        'email',
        '--id',
        emailId,
        '--times',
        '2',
        ...url,
      ])
      expect(mailed.stdout).toMatch(/1\/2 email -> 200 taken by email\(\)/)
      expect(mailed.stdout).toMatch(/2\/2 email -> 200 taken by email\(\)/)
      const readmeCurl = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
        .match(
          /^curl -X POST 'http:\/\/127\.0\.0\.1:8787\/cdn-cgi\/handler\/email[^\n]*\\\n[^\n]*/m,
        )?.[0]
        .replace('127.0.0.1:8787', `127.0.0.1:${ports.WORKER_PORT}`)
      expect(readmeCurl).toContain('--data-binary @local/samples/hello.eml')
      const curled = await shell(`${readmeCurl} -s -o /dev/null -w '%{http_code}'`)
      expect(curled.stdout).toBe('200')
      const emailRows = await queryRows(
        dbUrl,
        "SELECT channel_message_id FROM messages WHERE channel = 'email' AND (channel_message_id LIKE $1 OR channel_message_id LIKE '%hello.sample.1@customer.example%')",
        [`%${emailId}%`],
      )
      expect(emailRows).toHaveLength(2)

      // The failures CLI finds the stack's database by itself (no DATABASE_URL).
      expect(existsSync(DEV_STACK_FILE)).toBe(true)
      const failures = await tool('origin/failures/cli.ts', ['list'])
      expect(failures).toMatchObject({ code: 0, stdout: 'no failures\n' })
      expect(failures.stderr).toContain('using the database of the running npm run dev')

      // dev:sql shows the rows, on the same database, without a URL: the WhatsApp Cloud message once.
      const rows = await tool('local/dev-sql.ts', [
        `select channel, channel_message_id from messages where channel_message_id like '%${wamid}'`,
      ])
      expect(rows).toMatchObject({ code: 0 })
      expect(rows.stdout).toContain(wamid)
      expect(rows.stdout).toContain('(1 row)')

      // The origin dies: npm run dev prints the command that brings it back, console and all.
      await restartOriginAsPrinted(dev, ports.ORIGIN_PORT, operatorToken, devEnv)

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
      expect(existsSync(DEV_STACK_FILE)).toBe(false)
    } finally {
      await dev.stop({ graceMs: 5_000 })
    }
  })
})
