/**
 * The cost phase's figures (bench/cost.ts) as the report shows them: per event of each window,
 * the Worker's CPU and invocations, subrequests, Redis commands, queue, R2 and KV operations and
 * Postgres statements; and what a million such events cost at the platforms' list prices (the
 * marginal price, past each plan's included amounts; sources and their dates in
 * docs/benchmark.md, "What an event costs").
 * @module
 */
import type { CostReport, CostWindow } from './cost'
import { fmt } from './util'

/** US dollars per unit, list prices (docs/benchmark.md names each page and when it was read). */
export const PRICES = {
  /** Workers Standard: $0.30 per million requests (a queue consumer invocation is one too). */
  workersRequest: 0.3 / 1e6,
  /** Workers Standard: $0.02 per million CPU milliseconds. */
  workersCpuMs: 0.02 / 1e6,
  /** Upstash Redis pay-as-you-go: $0.20 per 100,000 commands. */
  upstashCommand: 0.2 / 1e5,
  /** Cloudflare Queues: $0.40 per million operations (64 KB written, read or deleted). */
  queueOperation: 0.4 / 1e6,
  /** R2 Standard: class A $4.50, class B $0.36 per million; deletes free. */
  r2ClassA: 4.5 / 1e6,
  r2ClassB: 0.36 / 1e6,
  /** Workers KV: reads $0.50, writes, deletes and lists $5.00 per million. */
  kvRead: 0.5 / 1e6,
  kvWrite: 5 / 1e6,
} as const

/** One window's counts per acknowledged event. */
export interface PerEvent {
  workerCpuMs: number
  invocations: number
  subrequests: Record<string, number>
  redisCommands: number
  redisByCommand: Record<string, number>
  queueOperations: { write: number; read: number; delete: number }
  r2: { classA: number; classB: number; free: number }
  kv: { read: number; write: number; delete: number; list: number }
  postgresStatements: number
  postgresByLabel: Record<string, number>
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0)

export function perEvent(w: CostWindow): PerEvent {
  const n = Math.max(w.events, 1)
  const per = (counts: Record<string, number>) =>
    Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / n]))
  const at = (name: string) => (w.worker[name] ?? 0) / n
  const subrequests = Object.fromEntries(
    Object.entries(w.worker)
      .filter(([k]) => k.startsWith('subrequest '))
      .map(([k, v]) => [k.slice('subrequest '.length), v / n]),
  )
  return {
    workerCpuMs: w.workerCpuMs / n,
    invocations: at('invocation fetch') + at('invocation queue'),
    subrequests,
    redisCommands: sum(w.redis) / n,
    redisByCommand: per(w.redis),
    queueOperations: {
      write: at('queue write'),
      read: at('queue read'),
      delete: at('queue delete'),
    },
    r2: { classA: at('r2 class A'), classB: at('r2 class B'), free: at('r2 free') },
    kv: {
      read: at('kv read'),
      write: at('kv write'),
      delete: at('kv delete'),
      list: at('kv list'),
    },
    postgresStatements: sum(w.postgres) / n,
    postgresByLabel: per(w.postgres),
  }
}

/** Dollars per million events of this window, by platform. */
export function perMillion(p: PerEvent): Record<string, number> {
  const m = 1e6
  const queue = p.queueOperations.write + p.queueOperations.read + p.queueOperations.delete
  const parts = {
    'Workers requests': p.invocations * PRICES.workersRequest * m,
    'Workers CPU': p.workerCpuMs * PRICES.workersCpuMs * m,
    'Upstash commands': p.redisCommands * PRICES.upstashCommand * m,
    'Queues operations': queue * PRICES.queueOperation * m,
    'R2 operations': (p.r2.classA * PRICES.r2ClassA + p.r2.classB * PRICES.r2ClassB) * m,
    'KV operations':
      (p.kv.read * PRICES.kvRead + (p.kv.write + p.kv.delete + p.kv.list) * PRICES.kvWrite) * m,
  }
  return { ...parts, total: sum(parts) }
}

const f2 = (n: number) => fmt(n, n !== 0 && Math.abs(n) < 0.1 ? 3 : 2)
const breakdown = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${f2(v)}`)
    .join(', ') || '—'

/** The "What an event costs" section of latest.md. */
export function costSection(report: CostReport): string[] {
  const windows = report.windows
  const rows = windows.map((w) => ({ w, p: perEvent(w) }))
  const cell = (fn: (p: PerEvent, w: CostWindow) => string) =>
    rows.map(({ w, p }) => fn(p, w)).join(' | ')
  const money = rows.map(({ p }) => perMillion(p))
  const moneyRow = (name: string) =>
    `| ${name} | ${money.map((m) => `$${f2(m[name] ?? 0)}`).join(' | ')} |`
  return [
    '## What an event costs',
    '',
    'Counted per acknowledged event in three windows of a gateway behind a counting entry ' +
      '(bench/cost-entry.ts: invocations, subrequests, queue, R2 and KV operations inside workerd), ' +
      'with the commands the Upstash stand-in ran and the statements the origin sent through the ' +
      `Neon proxy; each window waits out the decision-count flush (every ${report.decisionFlushSeconds} s ` +
      'per isolate, its subrequest and statements included here, not per event in production).',
    '',
    `| per event | ${windows.map((w) => w.label).join(' | ')} |`,
    `|---|${windows.map(() => '--:').join('|')}|`,
    `| events counted (load average) | ${cell((_, w) => `${fmt(w.events)} (${w.loadAverage1m})`)} |`,
    `| Worker CPU, ms (workerd under Miniflare) | ${cell((p) => f2(p.workerCpuMs))} |`,
    `| Worker invocations (fetch + queue) | ${cell((p) => f2(p.invocations))} |`,
    `| subrequests | ${cell((p) => `${f2(sum(p.subrequests))}: ${breakdown(p.subrequests)}`)} |`,
    `| Redis commands | ${cell((p) => `${f2(p.redisCommands)}: ${breakdown(p.redisByCommand)}`)} |`,
    `| queue operations (write / read / delete) | ${cell((p) => [p.queueOperations.write, p.queueOperations.read, p.queueOperations.delete].map(f2).join(' / '))} |`,
    `| R2 operations (class A / class B / free) | ${cell((p) => [p.r2.classA, p.r2.classB, p.r2.free].map(f2).join(' / '))} |`,
    `| KV operations (read / write / delete / list) | ${cell((p) => [p.kv.read, p.kv.write, p.kv.delete, p.kv.list].map(f2).join(' / '))} |`,
    `| Postgres statements | ${cell((p) => `${f2(p.postgresStatements)}: ${breakdown(p.postgresByLabel)}`)} |`,
    `| from a send to its row, ms: p50 / p99 (answer p50), a trickle of 40 at 10/s | ${cell((_, w) => timeToRowCell(w))} |`,
    '',
    "Per million such events at list prices (marginal: past the plans' included amounts and the " +
      'Workers Paid minimum; Postgres is billed by compute time, not statements, and is not priced here):',
    '',
    `| per million events | ${windows.map((w) => w.name).join(' | ')} |`,
    `|---|${windows.map(() => '--:').join('|')}|`,
    ...[
      'Workers requests',
      'Workers CPU',
      'Upstash commands',
      'Queues operations',
      'R2 operations',
      'KV operations',
      'total',
    ].map(moneyRow),
    '',
  ]
}

function timeToRowCell(w: CostWindow): string {
  const t = w.timeToRow
  if (!t) return '—'
  const missing = t.rows < t.events ? `; ${t.events - t.rows} of ${t.events} no row in 60 s` : ''
  return `${fmt(t.p50Ms, 0)} / ${fmt(t.p99Ms, 0)} (${fmt(t.answerP50Ms, 0)})${missing}`
}

/** One line per window for the printed summary. */
export function costLines(report: CostReport): string[] {
  return report.windows.map((w) => {
    const p = perEvent(w)
    const q = p.queueOperations
    return (
      `cost | ${w.name}: ${f2(p.workerCpuMs)} ms Worker CPU, ${f2(p.invocations)} invocations, ` +
      `${f2(sum(p.subrequests))} subrequests, ${f2(p.redisCommands)} Redis commands, ` +
      `${f2(q.write + q.read + q.delete)} queue operations, ${f2(p.r2.classA + p.r2.classB + p.r2.free)} R2, ` +
      `${f2(p.kv.read + p.kv.write + p.kv.delete + p.kv.list)} KV, ${f2(p.postgresStatements)} Postgres statements ` +
      `per event; $${f2(perMillion(p).total ?? 0)} per million (load average ${w.loadAverage1m})` +
      (w.timeToRow ? `; send to row p50 ${fmt(w.timeToRow.p50Ms, 0)} ms at a trickle` : '')
    )
  })
}
