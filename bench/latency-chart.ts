/**
 * The overload phase's chart (bench/overload.ts), a small hand-written SVG like bench/chart.ts:
 * each request's answer latency, from its scheduled send, against that send time; one colour per
 * mode, Slack's 3 s deadline dashed.
 * @module
 */

const SLACK_DEADLINE_MS = 3_000

/** Answer latency against each request's scheduled time, one dot per request, a colour per mode. */
export function latencyChart(
  modes: ReadonlyArray<{ mode: string; answerMs: readonly number[] }>,
  load: { ratePerS: number; durationS: number; title: string },
): string {
  const RATE = load.ratePerS
  const DURATION_S = load.durationS
  const W = 900
  const H = 360
  const left = 70
  const top = 50
  const plotW = 780
  const plotH = 240
  const maxMs = Math.max(SLACK_DEADLINE_MS * 1.2, ...modes.flatMap((m) => m.answerMs))
  const colors = ['#d62728', '#1f77b4']
  const x = (i: number) => left + (i / (RATE * DURATION_S)) * plotW
  const y = (ms: number) => top + plotH - (Math.min(ms, maxMs) / maxMs) * plotH
  const dots = modes
    .map((m, k) =>
      m.answerMs
        .map((ms, i) =>
          ms < 0
            ? ''
            : `<circle cx="${x(i).toFixed(1)}" cy="${y(ms).toFixed(1)}" r="1.3" fill="${colors[k]}" fill-opacity="0.5"/>`,
        )
        .join(''),
    )
    .join('\n')
  const ticksY = [0, 1_000, 2_000, 3_000, maxMs]
    .map(
      (ms) =>
        `<line x1="${left}" x2="${left + plotW}" y1="${y(ms)}" y2="${y(ms)}" stroke="#e5e5e5"/><text x="${left - 6}" y="${y(ms) + 4}" text-anchor="end">${(ms / 1000).toFixed(1)} s</text>`,
    )
    .join('')
  const ticksX = Array.from({ length: DURATION_S + 1 }, (_, s) => s)
    .filter((s) => s % 5 === 0)
    .map(
      (s) => `<text x="${x(s * RATE)}" y="${top + plotH + 16}" text-anchor="middle">${s} s</text>`,
    )
    .join('')
  const legend = modes
    .map(
      (m, k) =>
        `<circle cx="${left + 10 + k * 260}" cy="${H - 20}" r="5" fill="${colors[k]}"/><text x="${left + 20 + k * 260}" y="${H - 16}">${m.mode}</text>`,
    )
    .join('')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12" fill="#333">
<rect width="${W}" height="${H}" fill="#fff"/>
<text x="${W / 2}" y="24" text-anchor="middle" font-weight="700">${load.title}</text>
${ticksY}${ticksX}
<line x1="${left}" x2="${left + plotW}" y1="${y(SLACK_DEADLINE_MS)}" y2="${y(SLACK_DEADLINE_MS)}" stroke="#888" stroke-dasharray="6 4"/>
<text x="${left + plotW}" y="${y(SLACK_DEADLINE_MS) - 4}" text-anchor="end" fill="#666">Slack's deadline, 3 s</text>
${dots}
${legend}
</svg>
`
}
