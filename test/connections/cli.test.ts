/**
 * `npm run connections` against real Postgres: `import` reads today's variables into connections
 * that map back to the same variables (secrets as listed, current first; ids; settings), once
 * (a second run finds them all); create / rotate / disable / show from the shell print
 * fingerprints and never a secret; a refused field is named, exit 1; usage is exit 2.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { secretAad } from '../../contract/connection'
import { createTestDatabase, type TestDatabase } from '../../local/services'
import { runCli } from '../../origin/connections/cli'
import { importPlan } from '../../origin/connections/import'
import { getConnection } from '../../origin/connections/store'
import type { Database } from '../../origin/db'
import { importKeyRing, type KeyRing, newKekEntry, open } from '../../shared/envelope'
import { openTestDb } from '../support/origin'

const VARIABLES: Record<string, string> = {
  SLACK_SIGNING_SECRETS_BY_APP:
    'A0LOCAL=dev-slack-signing-secret|dev-slack-old,A0OTHER=dev-slack-other',
  SLACK_TEAMS_BY_APP: 'A0LOCAL=T0LOCAL|T0SECOND,A0OTHER=T0OTHER',
  TWILIO_AUTH_TOKENS_BY_ACCOUNT: 'AC00000000000000000000000000000000=dev-twilio-auth-token',
  TELEGRAM_SECRET_TOKENS_BY_BOT: '654321=dev-telegram-other-bot',
  WHATSAPP_APP_SECRETS_BY_APP: '111111=dev-whatsapp-app-secret,222222=dev-whatsapp-other-app',
  WHATSAPP_PHONE_NUMBERS_BY_APP: '111111=106540352242922,222222=106540352242923',
  MESSENGER_APP_SECRETS_BY_APP: '111111=dev-messenger-app-secret',
  MESSENGER_PAGES_BY_APP: '111111=106540352242922',
  INSTAGRAM_APP_SECRETS_BY_APP: '111111=dev-instagram-app-secret',
  INSTAGRAM_ACCOUNTS_BY_APP: '111111=17841400000000000',
  LINE_CHANNEL_SECRETS_BY_DESTINATION: 'U0123456789abcdef0123456789abcdef=dev-line-channel-secret',
  WECHAT_TOKENS_BY_ACCOUNT: 'gh_0123456789ab=devwechattoken,gh_ba9876543210=plainmodetoken',
  WECHAT_AES_KEYS_BY_ACCOUNT: 'gh_0123456789ab=DevWeChatEncodingAesKey0123456789abcdefABCD',
  WECHAT_APP_IDS_BY_ACCOUNT: 'gh_0123456789ab=wx0123456789abcdef',
  TEAMS_APP_IDS: '8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a',
  EMAIL_MAILBOX_ALIASES: '{"help@example.com":"support@example.com"}',
}
const SECRETS = Object.values(VARIABLES)
  .flatMap((v) => v.split(/[,=|]/))
  .filter((s) => s.startsWith('dev-') || s.includes('token'))

let database: TestDatabase
let db: Database
let keys: KeyRing
let env: Record<string, string>

beforeAll(async () => {
  database = await createTestDatabase()
  db = openTestDb(database.url)
  const kek = newKekEntry('o1')
  keys = (await importKeyRing(kek)) as KeyRing
  env = { DATABASE_URL: database.url, DATABASE_DRIVER: 'pg', ORIGIN_KEKS: kek }
})
afterAll(async () => {
  await db?.close()
  await database?.drop()
})

async function cli(args: string[], extra: Record<string, string> = {}) {
  const out: string[] = []
  const err: string[] = []
  const code = await runCli(
    args,
    { ...env, ...extra },
    { out: (l) => out.push(l), err: (l) => err.push(l) },
  )
  const all = [...out, ...err].join('\n')
  for (const secret of [...SECRETS, 'cli-secret-0001', 'cli-secret-0002'])
    expect(all).not.toContain(secret)
  return { code, out, err }
}

/** The variables a set of connections stands for: the import run backwards. */
async function variablesOf(ids: string[]): Promise<Record<string, Record<string, string>>> {
  const names: Record<string, [string, string | null, string | null]> = {
    slack: ['SLACK_SIGNING_SECRETS_BY_APP', 'SLACK_TEAMS_BY_APP', null],
    twilio: ['TWILIO_AUTH_TOKENS_BY_ACCOUNT', null, null],
    telegram: ['TELEGRAM_SECRET_TOKENS_BY_BOT', null, null],
    'whatsapp-cloud': ['WHATSAPP_APP_SECRETS_BY_APP', 'WHATSAPP_PHONE_NUMBERS_BY_APP', null],
    messenger: ['MESSENGER_APP_SECRETS_BY_APP', 'MESSENGER_PAGES_BY_APP', null],
    instagram: ['INSTAGRAM_APP_SECRETS_BY_APP', 'INSTAGRAM_ACCOUNTS_BY_APP', null],
    line: ['LINE_CHANNEL_SECRETS_BY_DESTINATION', null, null],
    wechat: ['WECHAT_TOKENS_BY_ACCOUNT', null, 'WECHAT_APP_IDS_BY_ACCOUNT'],
  }
  const vars: Record<string, Record<string, string>> = {}
  const set = (name: string, key: string, value: string) => {
    vars[name] = { ...vars[name], [key]: value }
  }
  for (const id of ids) {
    const c = await getConnection(db, id)
    if (!c) throw new Error('gone')
    const opened = async (field: string) => {
      const list = c.secrets.filter((s) => s.field === field)
      return Promise.all(list.map((s) => open(keys, s.sealed, secretAad(c.id, s.field, s.kid))))
    }
    if (c.channel === 'teams') set('TEAMS_APP_IDS', c.account, '')
    else if (c.channel === 'email')
      for (const alias of c.ids) set('EMAIL_MAILBOX_ALIASES', alias, c.account)
    else {
      const [secretsName, idsName, settingName] = names[c.channel] as [
        string,
        string | null,
        string | null,
      ]
      const field = c.channel === 'wechat' ? 'token' : (c.secrets[0]?.field as string)
      set(secretsName, c.account, (await opened(field)).join('|'))
      if (idsName) set(idsName, c.account, c.ids.join('|'))
      if (c.channel === 'wechat') {
        const aes = await opened('aes_key')
        if (aes.length) set('WECHAT_AES_KEYS_BY_ACCOUNT', c.account, aes.join('|'))
        if (settingName && c.settings.app_id) set(settingName, c.account, c.settings.app_id)
      }
    }
  }
  return vars
}

/** The input variables in the same form (tenant -> its list as written). */
function asMaps(input: Record<string, string>): Record<string, Record<string, string>> {
  const maps: Record<string, Record<string, string>> = {}
  for (const [name, value] of Object.entries(input)) {
    if (name === 'TEAMS_APP_IDS')
      maps[name] = Object.fromEntries(value.split(',').map((id) => [id, '']))
    else if (value.startsWith('{')) maps[name] = JSON.parse(value)
    else
      maps[name] = Object.fromEntries(
        value.split(',').map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
      )
  }
  return maps
}

describe('npm run connections -- import', () => {
  it('reads every variable as connections, each tenant one (the plan, before any database)', () => {
    const plan = importPlan(VARIABLES)
    expect(plan.refused).toEqual([])
    expect(plan.drafts.map((d) => `${d.channel} ${d.account}`).sort()).toEqual(
      [
        'email support@example.com',
        'instagram 111111',
        'line U0123456789abcdef0123456789abcdef',
        'messenger 111111',
        'slack A0LOCAL',
        'slack A0OTHER',
        'teams 8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a',
        'telegram 654321',
        'twilio AC00000000000000000000000000000000',
        'wechat gh_0123456789ab',
        'wechat gh_ba9876543210',
        'whatsapp-cloud 111111',
        'whatsapp-cloud 222222',
      ].sort(),
    )
    const slack = plan.drafts.find((d) => d.account === 'A0LOCAL')
    expect(slack).toMatchObject({
      ids: ['T0LOCAL', 'T0SECOND'],
      secrets: { signing_secret: ['dev-slack-signing-secret', 'dev-slack-old'] },
    })
  })

  it('imports from an env file: the connections map back to the same variables; a second run changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'connections-import-'))
    const file = join(dir, '.dev.vars')
    writeFileSync(
      file,
      Object.entries(VARIABLES)
        .map(([k, v]) => `${k}='${v}'`)
        .join('\n'),
    )
    const first = await cli(['import', '--env-file', file])
    expect(first.code).toBe(0)
    const created = first.out.filter((l) => l.startsWith('created '))
    expect(created).toHaveLength(13)
    const ids = created.map((l) => l.split(' ')[3] as string)
    expect(await variablesOf(ids)).toEqual(asMaps(VARIABLES))
    const again = await cli(['import', '--env-file', file])
    expect(again.code).toBe(0)
    expect(again.out.filter((l) => l.startsWith('exists '))).toHaveLength(13)
  })

  it('a Slack or Meta app without its ids variable is reported as not imported, naming it; the rest are imported', async () => {
    const plan = importPlan({
      SLACK_SIGNING_SECRETS_BY_APP: 'A0LONE=lone-secret',
      MESSENGER_APP_SECRETS_BY_APP: '333333=m-secret',
      TWILIO_AUTH_TOKENS_BY_ACCOUNT: `AC${'3'.repeat(32)}=tw-token`,
    })
    expect(plan.drafts.map((d) => `${d.channel} ${d.account}`)).toEqual([
      `twilio AC${'3'.repeat(32)}`,
    ])
    expect(plan.refused).toEqual([
      expect.objectContaining({ channel: 'slack', account: 'A0LONE', field: 'ids' }),
      expect.objectContaining({ channel: 'messenger', account: '333333', field: 'ids' }),
    ])
    expect(plan.refused[0]?.reason).toMatch(/SLACK_TEAMS_BY_APP/)
    expect(plan.refused[1]?.reason).toMatch(/MESSENGER_PAGES_BY_APP/)
    expect(JSON.stringify(plan)).not.toMatch(/lone-secret|m-secret"/)
    const result = await cli(['import'], {
      SLACK_SIGNING_SECRETS_BY_APP: 'A0LONE=lone-secret',
      TWILIO_AUTH_TOKENS_BY_ACCOUNT: `AC${'3'.repeat(32)}=tw-token`,
    })
    expect(result.code).toBe(1)
    expect(result.out.join('\n')).toMatch(/refused slack A0LONE: ids: SLACK_TEAMS_BY_APP/)
    expect(result.out.some((l) => /^created twilio AC3{32}/.test(l))).toBe(true)
  })

  it('API_KEYS: one api connection per tenant whose ids are its hashes; maps back; a second run changes nothing', async () => {
    const hash = (key: string) => createHash('sha256').update(key).digest('hex')
    const [a1, a2, b1] = [hash('key-a-1'), hash('key-a-2'), hash('key-b-1')]
    const API_KEYS = JSON.stringify({
      [a1]: 'tenant-a',
      [b1]: 'tenant-b',
      [a2.toUpperCase()]: 'tenant-a',
    })
    const plan = importPlan({ API_KEYS })
    expect(plan.refused).toEqual([])
    expect(plan.warnings).toEqual([])
    expect(plan.drafts.map((d) => [d.account, d.secrets])).toEqual([
      ['tenant-a', { api_key_hash: [a1, a2] }],
      ['tenant-b', { api_key_hash: [b1] }],
    ])
    const first = await cli(['import'], { API_KEYS })
    expect(first.code).toBe(0)
    const created = first.out.filter((l) => l.startsWith('created api '))
    expect(created).toHaveLength(2)
    const back: Record<string, string> = {}
    for (const line of created) {
      const c = await getConnection(db, line.split(' ')[3] as string)
      if (!c) throw new Error('gone')
      const held = await Promise.all(
        c.secrets.map((s) => open(keys, s.sealed, secretAad(c.id, s.field, s.kid))),
      )
      // The edge finds a key by its hash among the ids, then compares it with a held hash.
      expect([...c.ids].sort()).toEqual([...held].sort())
      expect(c.secrets.every((s) => s.field === 'api_key_hash')).toBe(true)
      for (const h of held) back[h] = c.account
    }
    expect(back).toEqual({ [a1]: 'tenant-a', [a2]: 'tenant-a', [b1]: 'tenant-b' })
    expect(back[hash('key-a-2')]).toBe('tenant-a')
    const again = await cli(['import'], { API_KEYS })
    expect(again.code).toBe(0)
    expect(again.out.filter((l) => l.startsWith('exists api '))).toHaveLength(2)
    expect(again.out.filter((l) => l.startsWith('created '))).toEqual([])
  })

  it('API_KEYS: the first of a repeated hash holds, a bad entry is warned, a tenant of 3 keys is refused by name; the rest imported', () => {
    const hash = (key: string) => createHash('sha256').update(key).digest('hex')
    const many = ['m1', 'm2', 'm3'].map(hash)
    const raw = `{"${hash('x')}":"first","${hash('x')}":"second","nothex":"t","${many[0]}":"many","${many[1]}":"many","${many[2]}":"many"}`
    const plan = importPlan({ API_KEYS: raw })
    expect(plan.drafts.map((d) => [d.account, d.secrets])).toEqual([
      ['first', { api_key_hash: [hash('x')] }],
    ])
    expect(plan.refused).toEqual([
      expect.objectContaining({ channel: 'api', account: 'many', field: 'secrets.api_key_hash' }),
    ])
    expect(plan.refused[0]?.reason).toMatch(/lists 3 keys .* at most 2; not imported/)
    expect(plan.warnings.join('\n')).toMatch(/entry 2 \(second\) repeats the hash/)
    expect(plan.warnings.join('\n')).toMatch(/entry 3 is not the SHA-256 hex/)
    expect(JSON.stringify(plan.refused) + plan.warnings.join('')).not.toContain(many[0])
  })

  it('imports from the environment; a tenant the registry model refuses is reported, exit 1', async () => {
    const result = await cli(['import'], {
      TWILIO_AUTH_TOKENS_BY_ACCOUNT: 'AC11111111111111111111111111111111=bad,token',
    })
    expect(result.out.some((l) => /^created twilio AC1{32}/.test(l))).toBe(true)
    const bad = await cli(['import'], { TELEGRAM_SECRET_TOKENS_BY_BOT: '777=a|b|c' })
    expect(bad.code).toBe(1)
    expect(bad.out.join('\n')).toMatch(/refused telegram 777: secrets\.secret_token/)
  })
})

describe('npm run connections -- create, rotate, disable, show', () => {
  it('takes secrets from variables, prints fingerprints only, names a refused field', async () => {
    const created = await cli(
      [
        'create',
        '--channel',
        'line',
        '--account',
        `U${'1'.repeat(32)}`,
        '--secret-env',
        'channel_secret=LINE_SECRET',
        '--output',
        'json',
      ],
      { LINE_SECRET: 'cli-secret-0001' },
    )
    expect(created.code).toBe(0)
    const view = JSON.parse(created.out[0] as string)
    expect(view.secrets[0].fingerprint).toMatch(/^sha256:/)
    const rotated = await cli(
      ['rotate', view.id, '--secret-env', 'channel_secret=NEXT', '--overlap-seconds', '60'],
      { NEXT: 'cli-secret-0002' },
    )
    expect(rotated.code).toBe(0)
    expect(rotated.out[0]).toMatch(
      /channel_secret:sha256:[0-9a-f]{8} channel_secret:sha256:[0-9a-f]{8} until /,
    )
    expect((await cli(['disable', view.id])).out[0]).toContain(' disabled v3 ')
    const shown = await cli(['show', view.id])
    expect(shown.out.join('\n')).toMatch(/disable by cli \(/)
    const refused = await cli(['create', '--channel', 'line', '--account', 'nope'])
    expect(refused).toMatchObject({ code: 1 })
    expect(refused.err[0]).toMatch(/connection_invalid.*account/)
    expect((await cli(['frobnicate'])).code).toBe(2)
    expect((await cli(['create', '--secret=cli-secret-0001'])).code).toBe(2)
  })
})

describe('npm run connections -- create --generate', () => {
  it('prints the generated secret once; show prints its fingerprint only', async () => {
    const created = await cli([
      'create',
      '--channel',
      'telegram',
      '--account',
      '9900001',
      '--generate',
      'secret_token',
    ])
    expect(created.code).toBe(0)
    const line = created.out
      .join('\n')
      .match(/generated secret_token \(shown this once\): ([A-Za-z0-9_-]{48})/)
    const token = line?.[1] ?? ''
    expect(token).toHaveLength(48)
    const id = created.out[0]?.split(' ')[0] ?? ''
    expect((await cli(['show', id])).out.join('\n')).not.toContain(token)
  })
})

describe('npm run connections -- rewrap', () => {
  it('moves every secret to the first ORIGIN_KEKS key; the old key can then go', async () => {
    const next = newKekEntry('o2')
    const rotated = await cli(['rewrap', '--output', 'json'], {
      ORIGIN_KEKS: `${next},${env.ORIGIN_KEKS}`,
    })
    expect(rotated.code).toBe(0)
    expect(JSON.parse(rotated.out[0] as string).rewrapped).toBeGreaterThan(0)
    const nextOnly = (await importKeyRing(next)) as KeyRing
    const { rows } = await import('pg').then(async ({ default: pg }) => {
      const client = new pg.Client({ connectionString: database.url })
      await client.connect()
      try {
        return await client.query(
          'SELECT connection_id, field, kid, sealed FROM connection_secrets',
        )
      } finally {
        await client.end()
      }
    })
    expect(rows.length).toBeGreaterThan(0)
    for (const r of rows) {
      await expect(
        open(nextOnly, r.sealed, secretAad(r.connection_id, r.field, r.kid)),
      ).resolves.toBeTypeOf('string')
    }
    const again = await cli(['rewrap', '--output', 'json'], {
      ORIGIN_KEKS: `${next},${env.ORIGIN_KEKS}`,
    })
    expect(JSON.parse(again.out[0] as string).rewrapped).toBe(0)
  })
})
