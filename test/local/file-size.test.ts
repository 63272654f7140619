/**
 * Small files: every production file is at most 300 lines (house style), kept here so that
 * `npm test` names the file that grew past it. Production is what ships or runs the system and its
 * tools: worker/, origin/, claims/, idempotency-http/, contract/, shared/, email/, ops/ and local/ (the dev stack and
 * the vendors' fixtures included: they are read and changed like the rest). Tests, the bench, the soak and
 * generated declarations (`*.d.ts`) are not.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const MAX_LINES = 300
const PRODUCTION_ROOTS = [
  'worker',
  'origin',
  'claims',
  'idempotency-http',
  'contract',
  'shared',
  'email',
  'ops',
  'local',
]
const REPO = join(import.meta.dirname, '..', '..')

/** Lines as `wc -l` counts them (a last line without its newline counts too). */
function lineCount(text: string): number {
  if (text === '') return 0
  const newlines = text.split('\n').length - 1
  return text.endsWith('\n') ? newlines : newlines + 1
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path)
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** Each production file under `root` over MAX_LINES, as `path: n lines`, longest first. */
function filesOverLimit(root: string, roots = PRODUCTION_ROOTS): string[] {
  return roots
    .flatMap((name) => sourceFiles(join(root, name)))
    .map((path) => ({ path, lines: lineCount(readFileSync(path, 'utf8')) }))
    .filter((file) => file.lines > MAX_LINES)
    .sort((a, b) => b.lines - a.lines)
    .map((file) => `${relative(root, file.path)}: ${file.lines} lines`)
}

describe('production file size', () => {
  it(`every production file is at most ${MAX_LINES} lines`, () => {
    expect(filesOverLimit(REPO), 'split these along their concepts').toEqual([])
  })

  it('names a file one line over, and only production .ts/.tsx files', () => {
    const root = mkdtempSync(join(tmpdir(), 'file-size-'))
    try {
      const lines = (n: number) => 'x\n'.repeat(n)
      mkdirSync(join(root, 'worker', 'channels'), { recursive: true })
      mkdirSync(join(root, 'local'), { recursive: true })
      mkdirSync(join(root, 'test'), { recursive: true })
      writeFileSync(join(root, 'worker', 'channels', 'long.ts'), `${lines(MAX_LINES)}x`)
      writeFileSync(join(root, 'worker', 'fits.ts'), lines(MAX_LINES))
      writeFileSync(join(root, 'worker', 'types.d.ts'), lines(MAX_LINES + 50))
      writeFileSync(join(root, 'worker', 'notes.md'), lines(MAX_LINES + 50))
      writeFileSync(join(root, 'local', 'page.tsx'), lines(MAX_LINES + 2))
      writeFileSync(join(root, 'test', 'long.test.ts'), lines(MAX_LINES + 50))
      expect(filesOverLimit(root, ['worker', 'local'])).toEqual([
        `local/page.tsx: ${MAX_LINES + 2} lines`,
        `worker/channels/long.ts: ${MAX_LINES + 1} lines`,
      ])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
