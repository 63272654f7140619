/**
 * The origin restart command `npm run dev` prints: every variable the origin was started with, each
 * secret named where it came from (the environment, the dev vars file) or masked, never its value.
 */
import { describe, expect, it } from 'vitest'
import type { DevVars } from '../../local/dev-vars'
import { originRestartCommand } from '../../local/origin-restart'

const devVars: DevVars = {
  source: '.dev.vars',
  values: {
    OPERATOR_TOKEN: 'operator-token-from-env',
    UPSTASH_REDIS_REST_TOKEN: 'upstash-token-from-file',
    ORIGIN_SHARED_SECRET: 'shared-secret-from-file',
    LOG_LEVEL: 'debug',
  },
  fromEnvironment: ['OPERATOR_TOKEN'],
}

const originEnv = {
  DATABASE_URL: 'postgres://dev:pg-password@127.0.0.1:5432/inbound_dedup_dev',
  NEON_WS_PROXY: '127.0.0.1:40123/v2',
  OPERATOR_TOKEN: 'operator-token-from-env',
  UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:8079',
  UPSTASH_REDIS_REST_TOKEN: 'upstash-token-from-file',
  ORIGIN_SHARED_SECRET: 'shared-secret-from-file',
  GMAIL_CLIENT_SECRET: 'made-up-by-a-test',
  LOG_LEVEL: 'debug',
  EMAIL_MAILBOX_ALIASES: 'help@x.example=support@x.example support@y',
}

describe('the origin restart command', () => {
  const command = originRestartCommand(originEnv, 8788, devVars)

  it('sets every variable the origin had, on its port', () => {
    expect(command.startsWith('ORIGIN_PORT=8788 ')).toBe(true)
    expect(command.endsWith(' npm run origin')).toBe(true)
    for (const name of Object.keys(originEnv)) expect(command).toContain(` ${name}=`)
  })

  it('reads each secret from where it came, masks the rest, prints none', () => {
    expect(command).toContain(' OPERATOR_TOKEN="$OPERATOR_TOKEN" ')
    expect(command).toContain(
      ` UPSTASH_REDIS_REST_TOKEN="$(sed -n 's/^UPSTASH_REDIS_REST_TOKEN=//p' .dev.vars)" `,
    )
    expect(command).toContain(" GMAIL_CLIENT_SECRET='***' ")
    expect(command).toContain(
      " DATABASE_URL='postgres://dev:***@127.0.0.1:5432/inbound_dedup_dev' ",
    )
    expect(command).toContain(' UPSTASH_REDIS_REST_URL=http://127.0.0.1:8079 ')
    for (const value of ['operator-token-from-env', 'upstash-token-from-file', 'pg-password']) {
      expect(command).not.toContain(value)
    }
    expect(command).not.toContain('shared-secret-from-file')
    expect(command).not.toContain('made-up-by-a-test')
  })

  it('quotes what the shell would split', () => {
    expect(command).toContain(
      " EMAIL_MAILBOX_ALIASES='help@x.example=support@x.example support@y' ",
    )
    expect(command).toContain(' LOG_LEVEL=debug ')
  })
})
