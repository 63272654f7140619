/**
 * The benchmark's chart (docs/benchmark.md), as a small hand-written SVG: throughput (events/s) and p99 latency against
 * concurrency, one line per scenario, two panels side by side. No chart library: a few dozen
 * lines of SVG are easier to keep than a dependency.
 * @module
 */

export interface ChartSeries {
  label: string
  color: string
  dashed?: boolean
  /** [concurrency, value]; points may be missing for some concurrencies. */
  throughput: Array<[number, number]>
  p99: Array<[number, number]>
}

export interface ChartInput {
  title: string
  subtitle: string
  concurrencies: number[]
  series: ChartSeries[]
}

const W = 900
const H = 390
const PANEL_W = 350
const PANEL_H = 230
const TOP = 84
const LEFTS = [80, 530]

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** A "nice" axis maximum and step: 1, 2 or 5 × 10^k, about five ticks. */
function niceScale(max: number): { top: number; step: number } {
  if (max <= 0) return { top: 1, step: 0.2 }
  const rough = max / 5
  const power = 10 ** Math.floor(Math.log10(rough))
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power
  return { top: Math.ceil(max / step) * step, step }
}

function tickLabel(value: number): string {
  return value >= 1000 ? `${value / 1000}k` : String(Math.round(value * 10) / 10)
}

function panel(
  left: number,
  title: string,
  unit: string,
  input: ChartInput,
  pick: (s: ChartSeries) => Array<[number, number]>,
): string {
  const values = input.series.flatMap((s) => pick(s).map(([, v]) => v))
  const { top, step } = niceScale(Math.max(0, ...values) * 1.05)
  const xs = input.concurrencies
  const xAt = (c: number) => {
    const i = xs.indexOf(c)
    return left + (xs.length === 1 ? PANEL_W / 2 : (i / (xs.length - 1)) * PANEL_W)
  }
  const yAt = (v: number) => TOP + PANEL_H - (v / top) * PANEL_H
  const out: string[] = []
  out.push(
    `<text x="${left + PANEL_W / 2}" y="${TOP - 14}" text-anchor="middle" class="t">${esc(title)}</text>`,
  )
  for (let v = 0; v <= top + step / 2; v += step) {
    const y = yAt(v).toFixed(1)
    out.push(`<line x1="${left}" x2="${left + PANEL_W}" y1="${y}" y2="${y}" class="g"/>`)
    out.push(`<text x="${left - 6}" y="${y}" dy="4" text-anchor="end">${tickLabel(v)}</text>`)
  }
  for (const c of xs) {
    out.push(
      `<text x="${xAt(c).toFixed(1)}" y="${TOP + PANEL_H + 18}" text-anchor="middle">${c}</text>`,
    )
  }
  out.push(
    `<text x="${left + PANEL_W / 2}" y="${TOP + PANEL_H + 38}" text-anchor="middle">concurrent connections</text>`,
  )
  out.push(
    `<text x="${left - 48}" y="${TOP + PANEL_H / 2}" text-anchor="middle" transform="rotate(-90 ${left - 48} ${TOP + PANEL_H / 2})">${esc(unit)}</text>`,
  )
  out.push(
    `<line x1="${left}" x2="${left}" y1="${TOP}" y2="${TOP + PANEL_H}" class="a"/>` +
      `<line x1="${left}" x2="${left + PANEL_W}" y1="${TOP + PANEL_H}" y2="${TOP + PANEL_H}" class="a"/>`,
  )
  for (const s of input.series) {
    const points = pick(s)
      .filter(([c]) => xs.includes(c))
      .sort((a, b) => a[0] - b[0])
    if (points.length === 0) continue
    const path = points.map(([c, v]) => `${xAt(c).toFixed(1)},${yAt(v).toFixed(1)}`).join(' ')
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : ''
    out.push(
      `<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="2.5"${dash}/>`,
    )
    for (const [c, v] of points) {
      out.push(
        `<circle cx="${xAt(c).toFixed(1)}" cy="${yAt(v).toFixed(1)}" r="3.5" fill="${s.color}"/>`,
      )
    }
  }
  return out.join('\n')
}

export function renderChart(input: ChartInput): string {
  const legend = input.series
    .map((s, i) => {
      const x = 80 + i * 250
      const dash = s.dashed ? ' stroke-dasharray="6 4"' : ''
      return (
        `<line x1="${x}" x2="${x + 26}" y1="${H - 22}" y2="${H - 22}" stroke="${s.color}" stroke-width="2.5"${dash}/>` +
        `<text x="${x + 32}" y="${H - 18}">${esc(s.label)}</text>`
      )
    })
    .join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12" fill="#333">
<style>.g{stroke:#e5e5e5;stroke-width:1}.a{stroke:#888;stroke-width:1}.t{font-size:14px;font-weight:600}.h{font-size:16px;font-weight:700}.s{fill:#666}</style>
<rect width="${W}" height="${H}" fill="#fff"/>
<text x="${W / 2}" y="24" text-anchor="middle" class="h">${esc(input.title)}</text>
<text x="${W / 2}" y="42" text-anchor="middle" class="s">${esc(input.subtitle)}</text>
${panel(LEFTS[0] as number, 'Throughput', 'events/s', input, (s) => s.throughput)}
${panel(LEFTS[1] as number, 'p99 latency', 'ms', input, (s) => s.p99)}
${legend}
</svg>
`
}
