/**
 * `npm run dev` settings: .dev.vars, else .dev.vars.example with a warning; the environment wins;
 * warnings never carry values.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadDevVars } from '../../local/dev-vars'

let root: string
const warnings: string[] = []
const warn = (message: string) => warnings.push(message)

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dev-vars-'))
  warnings.length = 0
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

const EXAMPLE = [
  '# comment',
  'SLACK_SIGNING_SECRET=example-slack-secret',
  'ORIGIN_SHARED_SECRET="example shared secret"',
  'TELEGRAM_BOT_ID=123',
  '',
].join('\n')

describe('loadDevVars', () => {
  it('falls back to .dev.vars.example, with a warning that names no value', () => {
    writeFileSync(join(root, '.dev.vars.example'), EXAMPLE)
    const vars = loadDevVars({ root, env: {}, warn })
    expect(vars.source).toBe('.dev.vars.example')
    expect(vars.values).toEqual({
      SLACK_SIGNING_SECRET: 'example-slack-secret',
      ORIGIN_SHARED_SECRET: 'example shared secret',
      TELEGRAM_BOT_ID: '123',
    })
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/\.dev\.vars\.example/)
    for (const value of Object.values(vars.values)) expect(warnings[0]).not.toContain(value)
  })

  it('prefers .dev.vars, silently', () => {
    writeFileSync(join(root, '.dev.vars.example'), EXAMPLE)
    writeFileSync(join(root, '.dev.vars'), 'SLACK_SIGNING_SECRET=mine\n')
    const vars = loadDevVars({ root, env: {}, warn })
    expect(vars.source).toBe('.dev.vars')
    expect(vars.values).toEqual({ SLACK_SIGNING_SECRET: 'mine' })
    expect(warnings).toEqual([])
  })

  it('lets non-empty environment variables win, and takes extra names from it', () => {
    writeFileSync(join(root, '.dev.vars'), EXAMPLE)
    const vars = loadDevVars({
      root,
      env: {
        SLACK_SIGNING_SECRET: 'from-env',
        TELEGRAM_BOT_ID: '',
        REDIS_URL: 'redis://127.0.0.1:6379',
        UNRELATED: 'x',
      },
      alsoFromEnvironment: ['REDIS_URL', 'DATABASE_URL'],
      warn,
    })
    expect(vars.values.SLACK_SIGNING_SECRET).toBe('from-env')
    expect(vars.values.TELEGRAM_BOT_ID).toBe('123')
    expect(vars.values.REDIS_URL).toBe('redis://127.0.0.1:6379')
    expect(vars.values).not.toHaveProperty('DATABASE_URL')
    expect(vars.values).not.toHaveProperty('UNRELATED')
    expect(vars.fromEnvironment.sort()).toEqual(['REDIS_URL', 'SLACK_SIGNING_SECRET'])
  })

  it('without any file, uses the environment only and says so', () => {
    const vars = loadDevVars({
      root,
      env: { REDIS_URL: 'redis://x' },
      alsoFromEnvironment: ['REDIS_URL'],
      warn,
    })
    expect(vars.source).toBe('none')
    expect(vars.values).toEqual({ REDIS_URL: 'redis://x' })
    expect(warnings[0]).toMatch(/neither/)
  })

  it('reads the repository’s own .dev.vars.example (a fresh clone runs)', () => {
    const vars = loadDevVars({ root: join(import.meta.dirname, '..', '..'), env: {}, warn })
    expect(vars.source === '.dev.vars' || vars.source === '.dev.vars.example').toBe(true)
    expect(vars.values.UPSTASH_REDIS_REST_TOKEN).toBeTruthy()
    expect(vars.values.ORIGIN_SHARED_SECRET).toBeTruthy()
  })
})
