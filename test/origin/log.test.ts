/**
 * The origin's log lines on stdout (origin/log.ts), in a Node process of their own whose stdout is
 * a pipe, as the origin's is under a supervisor: the lines of one turn of the event loop go out
 * in one write, in order; lines of later turns in later writes; and the lines logged just before
 * the process exits are written, by `process.exit()` and by an uncaught exception alike.
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../../local/stack'

/** Runs `body` after `logger` is made, counting process.stdout.write calls into stderr. */
function run(body: string): { lines: string[]; writes: number; status: number | null } {
  const script = `
    import { createLogger } from ${JSON.stringify(join(REPO_ROOT, 'origin', 'log.ts'))}
    let writes = 0
    const real = process.stdout.write.bind(process.stdout)
    process.stdout.write = (chunk, ...rest) => { writes++; return real(chunk, ...rest) }
    process.on('exit', () => process.stderr.write('writes=' + writes))
    const logger = createLogger({ level: 'info' })
    ${body}
  `
  const child = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', script],
    {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 30_000,
    },
  )
  const lines = child.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { msg: string }).msg)
  const writes = Number(/writes=(\d+)/.exec(child.stderr)?.[1] ?? -1)
  return { lines, writes, status: child.status }
}

describe('origin log lines on stdout', () => {
  it('the lines of one turn in one write, in order; a later turn in a write of its own', () => {
    const out = run(`
      for (let i = 0; i < 50; i++) logger.info('line ' + i)
      setTimeout(() => logger.info('later'), 20)
    `)
    expect(out.lines).toEqual([...Array.from({ length: 50 }, (_, i) => `line ${i}`), 'later'])
    expect(out.writes).toBe(2)
    expect(out.status).toBe(0)
  })

  it('lines logged just before process.exit() are written', () => {
    const out = run(`
      logger.info('stopping')
      logger.info('stopped')
      process.exit(3)
    `)
    expect(out.lines).toEqual(['stopping', 'stopped'])
    expect(out.status).toBe(3)
  })

  it('lines logged just before an uncaught exception are written', () => {
    const out = run(`
      setTimeout(() => {
        logger.error('about to fail')
        throw new Error('boom')
      }, 0)
    `)
    expect(out.lines).toEqual(['about to fail'])
    expect(out.status).toBe(1)
  })
})
