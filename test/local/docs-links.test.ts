/**
 * Every relative link in README.md and docs/ resolves: the file (or folder) exists, and an
 * `#anchor` names a heading of the target, slugged as GitHub does. A moved section or a renamed
 * heading fails here instead of in a reader's browser.
 */
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')

function markdownFiles(): string[] {
  const docs = join(ROOT, 'docs')
  const inDocs = readdirSync(docs, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(docs, name))
  return [join(ROOT, 'README.md'), ...inDocs]
}

/** The text outside fenced code blocks (a `# comment` in a shell block is no heading). */
function prose(markdown: string): string[] {
  let fenced = false
  return markdown.split('\n').filter((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced
      return false
    }
    return !fenced
  })
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of prose(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
    if (heading === undefined) continue
    const slug = heading
      .replace(/<[^>]*>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    anchors.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return anchors
}

interface Link {
  target: string
  line: number
}

function relativeLinks(markdown: string): Link[] {
  const links: Link[] = []
  let fenced = false
  markdown.split('\n').forEach((line, index) => {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    if (fenced) return
    const code = /`[^`]*`/g
    for (const match of line.replace(code, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1] as string
      if (/^[a-z]+:/i.test(target)) continue
      links.push({ target, line: index + 1 })
    }
  })
  return links
}

function brokenLinks(file: string): string[] {
  const markdown = readFileSync(file, 'utf8')
  const broken: string[] = []
  for (const { target, line } of relativeLinks(markdown)) {
    const [path = '', anchor] = target.split('#')
    const resolved = path === '' ? file : join(dirname(file), decodeURIComponent(path))
    const where = `${relative(ROOT, file)}:${line} → ${target}`
    if (!existsSync(resolved)) {
      broken.push(`${where} (no such file)`)
      continue
    }
    if (anchor === undefined || statSync(resolved).isDirectory()) continue
    if (!resolved.endsWith('.md')) continue
    if (!headingAnchors(readFileSync(resolved, 'utf8')).has(anchor)) {
      broken.push(`${where} (no such heading)`)
    }
  }
  return broken
}

describe('documentation links', () => {
  it('slugs headings as GitHub does', () => {
    const anchors = headingAnchors(
      '# The claim protocol (claims/)\n## Nemesis soak (`npm run soak`)\n## Setup\n## Setup\n```\n# not a heading\n```\n',
    )
    expect([...anchors]).toEqual([
      'the-claim-protocol-claims',
      'nemesis-soak-npm-run-soak',
      'setup',
      'setup-1',
    ])
  })

  it('finds a missing file and a missing heading, not links in code (the check can fail)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'docs-links-'))
    writeFileSync(join(dir, 'other.md'), '# Here\n')
    const file = join(dir, 'README.md')
    writeFileSync(
      file,
      '[a](other.md#here) [b](nowhere.md) [c](other.md#gone) `[d](not-a-link)`\n```\n[e](nor.md)\n```\n',
    )
    expect(brokenLinks(file).map((line) => line.replace(/^.*→ /, ''))).toEqual([
      'nowhere.md (no such file)',
      'other.md#gone (no such heading)',
    ])
  })

  for (const file of markdownFiles()) {
    it(`${relative(ROOT, file)}: every relative link and anchor resolves`, () => {
      expect(brokenLinks(file)).toEqual([])
    })
  }
})
