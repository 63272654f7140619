/**
 * Reads a V8 `.cpuprofile` (what `node --cpu-prof` writes) and names where the time went: self
 * time per function, and per package (node_modules/<name>, node: internals, our own files).
 *
 *   tsx bench/profile.ts <file.cpuprofile>     # prints the summary
 * @module
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { ProfileSummary } from './report'
import { round } from './util'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

/** Where a script lives, short: `pkg hono`, `node:internal/...`, `origin/store.ts`. */
function place(url: string): string {
  if (!url) return '(native)'
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg?.[1]) return `pkg ${pkg[1]}`
  if (url.startsWith('node:')) return url
  const ours = /\/((?:origin|contract|shared|email|ops|local|worker|bench)\/[^?]+)/.exec(url)
  return ours?.[1] ?? url.replace(/^file:\/\//, '')
}

/** Self time by function and by place (ms), largest first. */
export function summarizeProfile(
  file: string,
  topN = 15,
): ProfileSummary & {
  byPlace: Array<{ where: string; selfMs: number; pct: number }>
} {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const selfUs = new Map<number, number>()
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  const byFn = new Map<string, { fn: string; where: string; us: number }>()
  const byPlace = new Map<string, number>()
  let total = 0
  for (const [id, us] of selfUs) {
    const node = byId.get(id)
    if (!node) continue
    total += us
    const { functionName, url, lineNumber } = node.callFrame
    const where = place(url)
    const fn = functionName || '(anonymous)'
    const key = `${fn}\u0000${where}:${lineNumber}`
    const entry = byFn.get(key) ?? { fn, where: `${where}:${lineNumber + 1}`, us: 0 }
    entry.us += us
    byFn.set(key, entry)
    if (fn !== '(idle)') byPlace.set(where, (byPlace.get(where) ?? 0) + us)
  }
  // Percentages of the busy time: an origin waiting on Postgres is mostly (idle).
  const busy = total - (byFnIdle(byFn) ?? 0)
  const pct = (us: number) => round((100 * us) / Math.max(1, busy), 1)
  return {
    file,
    totalMs: round(total / 1000, 0),
    busyMs: round(busy / 1000, 0),
    top: [...byFn.values()]
      .filter((e) => e.fn !== '(idle)')
      .sort((a, b) => b.us - a.us)
      .slice(0, topN)
      .map((e) => ({ fn: e.fn, where: e.where, selfMs: round(e.us / 1000, 0), pct: pct(e.us) })),
    byPlace: [...byPlace.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([where, us]) => ({ where, selfMs: round(us / 1000, 0), pct: pct(us) })),
  }
}

function byFnIdle(byFn: Map<string, { fn: string; us: number }>): number | undefined {
  let idle = 0
  for (const entry of byFn.values()) if (entry.fn === '(idle)') idle += entry.us
  return idle
}

/**
 * The largest profile in `dir` whose name passes `accept` (tsx runs two node processes; the
 * server's profile is the big one).
 */
export function largestProfile(dir: string, accept: (name: string) => boolean = () => true) {
  try {
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.cpuprofile') && accept(f))
      .map((f) => join(dir, f))
    files.sort((a, b) => statSync(b).size - statSync(a).size)
    return files[0] ?? null
  } catch {
    return null
  }
}

if (process.argv[1] && /bench\/profile\.ts$/.test(process.argv[1])) {
  const file = process.argv[2]
  if (!file) {
    process.stderr.write('usage: tsx bench/profile.ts <file.cpuprofile>\n')
    process.exit(2)
  }
  const summary = summarizeProfile(file, 25)
  process.stdout.write(
    `${summary.file}: ${summary.totalMs} ms sampled, ${summary.busyMs} ms busy (not idle)\n\nby place (% of busy):\n`,
  )
  for (const p of summary.byPlace) {
    process.stdout.write(
      `${String(p.selfMs).padStart(8)} ms ${String(p.pct).padStart(5)}%  ${p.where}\n`,
    )
  }
  process.stdout.write('\nby function:\n')
  for (const t of summary.top) {
    process.stdout.write(
      `${String(t.selfMs).padStart(8)} ms ${String(t.pct).padStart(5)}%  ${t.fn}  ${t.where}\n`,
    )
  }
}
