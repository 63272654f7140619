/**
 * The report's sections of the open-loop measurements and the alternated insert comparison: the
 * Worker's capacity measured first (every open-loop rate a share of it), the backfill, the
 * overload and queue phases, the origin against the raw INSERT.
 * @module
 */
import type { CapacityReport } from './capacity-figures'
import type { InsertRatio } from './insert-ratio'
import { drainPhrase, type OverloadReport } from './overload'
import type { QueueDrainReport } from './queue-drain'
import type { StepResult } from './steps'
import { type Target, targetsList } from './targets'
import { fmt } from './util'

/** The capacity sweep, when a phase set its rates from it. */
export function capacitySection(c: CapacityReport | undefined): string[] {
  if (!c) return []
  return [
    '## The Worker alone on the queue path (measured first)',
    '',
    'Verify + claim + queue send, every first-seen event shed, the consumer parked ' +
      '(bench/capacity.ts), open loop, a few seconds a rate; every open-loop rate after it is a ' +
      'share of the capacity found here:',
    '',
    '| offered/s | requests | 2xx | p50 ms | p99 ms (from schedule) | workerd CPU ms/event | p99 ≤ 1 s, ≥ 99 % 2xx |',
    '|--:|--:|--:|--:|--:|--:|---|',
    ...c.steps.map(
      (s) =>
        `| ${fmt(s.ratePerS)} | ${fmt(s.offered)} | ${fmt(s.okShare * 100, 1)} % | ${fmt(s.p50Ms)} | ` +
        `${fmt(s.p99Ms)} | ${fmt(s.workerdCpuMsPerEvent, 2)} | ${s.passed ? 'yes' : 'no'} |`,
    ),
    '',
    `Capacity: ${c.ceilingFound ? '' : 'at least '}${fmt(c.capacityPerS)}/s (load average ${c.loadAverage1m}).`,
    '',
  ]
}

/** The origin against the raw INSERT, alternated (phase `direct`). */
export function insertRatioSection(r: Omit<InsertRatio, 'slices'> | undefined): string[] {
  if (!r) return []
  const components = [
    ...new Set([...Object.keys(r.origin.cpuUsPerEvent), ...Object.keys(r.raw.cpuUsPerEvent)]),
  ]
  return [
    '## The origin insert path against a raw INSERT, alternated',
    '',
    `${r.rounds} rounds of ${r.sliceS} s of each at c=${r.concurrency}, origin first (bench/insert-ratio.ts); ` +
      `load average ${Math.min(...r.loadAverages)} to ${Math.max(...r.loadAverages)}.`,
    '',
    `| | events/s | ${components.join(' | ')} |`,
    `|---|--:|${components.map(() => '--:').join('|')}|`,
    ...(['origin', 'raw'] as const).map((side) => {
      const s = r[side]
      const label = side === 'origin' ? 'origin insert path' : 'raw one-statement INSERT'
      return `| ${label} | ${fmt(s.eventsPerS)} | ${components.map((c) => fmt(s.cpuUsPerEvent[c] ?? 0)).join(' | ')} |`
    }),
    '',
    `CPU in µs per acknowledged event. The origin path at ${fmt(r.share * 100)} % of the raw INSERT.`,
    '',
  ]
}

export function backfillSection(steps: readonly StepResult[]): string[] {
  return steps
    .filter((s) => s.openLoop)
    .flatMap((s) => {
      const o = s.openLoop
      if (!o) return []
      return [
        `## ${s.scenario}: ${s.id}`,
        '',
        `- Scheduled ${fmt(o.scheduled)} requests at ${fmt(o.ratePerS)}/s (${fmt(o.sendDurationS)} s); ` +
          `answered at ${fmt(o.achievedRatePerS)}/s; ${fmt(s.ok2xx)} 2xx, ${fmt(s.non2xx)} other, ` +
          `${fmt(s.errors)} errors.`,
        `- Latency from the scheduled send: p50 ${fmt(s.latency.p50, 1)}, p95 ${fmt(s.latency.p95, 1)}, ` +
          `p99 ${fmt(s.latency.p99, 1)}, max ${fmt(s.latency.max, 1)} ms; the load generator sent at ` +
          `most ${fmt(o.maxSendLagMs, 1)} ms late.`,
        `- Backlog (sent, not answered): max ${fmt(o.maxBacklog)}; each second: ` +
          `${o.backlogEverySecond.join(', ')}; drained ${fmt(o.drainS, 2)} s after the last send.`,
        `- Rows: ${s.checks.map((c) => `${c.ok ? 'ok' : 'FAILED'}: ${c.detail}`).join('; ')}.`,
        '',
      ]
    })
}

/** The overload and queue phases: modes, drain per batch size, targets. */
export function overloadSection(report: {
  overload?: OverloadReport
  queueDrain?: QueueDrainReport
  overloadTargets: readonly Target[]
}): string[] {
  const { overload, queueDrain } = report
  if (!overload && !queueDrain) return []
  const out = ['## Overload and the spool queue', '']
  if (overload) {
    out.push(
      `The overload rate ${fmt(overload.ratePerS)}/s is ` +
        (overload.rateShareOfCapacity === null
          ? 'not shown to be inside the capacity measured first.'
          : `${fmt(overload.rateShareOfCapacity * 100)} % of the capacity measured first` +
            (overload.rateShareOfCapacity > 0.5 ? ' (above half: not "well inside").' : '.')),
      '',
      `Overload: ${fmt(overload.ratePerS)}/s for ${overload.durationS} s, origin behind a proxy ` +
        `(${overload.originLimit}); load average at the end ${overload.loadAverage.join(' / ')}:`,
      '',
      "| mode | 2xx within 3 s | p50 / p99 ms | drain after the load, at the origin's limit | rows per ack | missing | workerd CPU ms/event |",
      '|---|--:|--:|---|--:|--:|--:|',
      ...overload.modes.map(
        (m) =>
          `| ${m.mode} | ${fmt(m.within3sShare * 100, 1)} % | ${fmt(m.p50Ms)} / ${fmt(m.p99Ms)} | ` +
          `${drainPhrase(m)} | ${m.rowsPerAcknowledged} | ${m.missing} | ` +
          `${fmt(m.workerdCpuMsPerEvent, 2)} |`,
      ),
      '',
    )
  }
  if (queueDrain) {
    out.push(
      `Spool drain per \`max_batch_size\` (bench/queue-drain.ts): a backlog of ${fmt(queueDrain.backlog)} ` +
        'queued Slack events drained into the origin at its own pace, and into a slow origin ' +
        `(${queueDrain.slowOrigin}); \`max_batch_timeout\` 0; load average ${queueDrain.loadAverage1m}:`,
      '',
      '| max_batch_size | origin | events | drain s | events/s | origin CPU ms/event | workerd CPU ms/event | missing |',
      '|--:|---|--:|--:|--:|--:|--:|--:|',
      ...queueDrain.results.map(
        (r) =>
          `| ${r.maxBatchSize} | ${r.origin} | ${fmt(r.events)} | ${fmt(r.drainS, 2)} | ${fmt(r.eventsPerS)} | ` +
          `${fmt(r.originCpuMsPerEvent, 2)} | ${fmt(r.workerdCpuMsPerEvent, 2)} | ${r.missing} |`,
      ),
      '',
      'The origin alone taking batches from several callers at once (what concurrent consumer ' +
        'invocations would give it; Miniflare runs one batch at a time): ' +
        queueDrain.originByConcurrency
          .map((o) => `c=${o.concurrency}: ${fmt(o.eventsPerS)} events/s`)
          .join(', ') +
        ` (${queueDrain.originByConcurrency[0]?.eventsPerBatch ?? 0} events a batch).`,
      '',
    )
  }
  out.push('Overload targets:', '', targetsList(report.overloadTargets), '')
  return out
}
