/**
 * A channel's deliveries over time as an inline SVG (server-rendered, no script): new, duplicate
 * and rejected per time step, one polyline each, scaled to the largest count.
 * @module
 */
import type { FC } from 'hono/jsx'
import type { SeriesPoint } from '../overview'

const W = 560
const H = 120
const PAD = 24
const LINES = [
  ['forwarded', '#137333', 'new'],
  ['duplicate', '#1a73e8', 'duplicate'],
  ['rejected', '#b3261e', 'rejected'],
] as const

export const Chart: FC<{ points: SeriesPoint[]; since: Date; until: Date }> = ({
  points,
  since,
  until,
}) => {
  const span = Math.max(1, until.getTime() - since.getTime())
  const max = Math.max(1, ...points.flatMap((p) => [p.forwarded, p.duplicate, p.rejected]))
  const x = (at: Date) => PAD + ((at.getTime() - since.getTime()) / span) * (W - 2 * PAD)
  const y = (n: number) => H - PAD - (n / max) * (H - 2 * PAD)
  return (
    <svg
      width={W}
      height={H}
      viewBox={`0 0 ${W} ${H}`}
      role="img"
      aria-label="deliveries over time"
    >
      <rect x="0" y="0" width={W} height={H} fill="#fff" />
      <line x1={PAD} y1={H - PAD} x2={W - PAD} y2={H - PAD} stroke="#999" />
      <text x={PAD} y={H - 6} font-size="10" fill="#667">
        {since.toISOString().slice(11, 16)}
      </text>
      <text x={W - PAD - 28} y={H - 6} font-size="10" fill="#667">
        {until.toISOString().slice(11, 16)}
      </text>
      <text x="2" y={PAD} font-size="10" fill="#667">
        {String(max)}
      </text>
      {LINES.map(([key, color, label], i) => (
        <g>
          <polyline
            fill="none"
            stroke={color}
            stroke-width="2"
            points={points.map((p) => `${x(p.at).toFixed(1)},${y(p[key]).toFixed(1)}`).join(' ')}
          />
          {points.map((p) => (
            <circle cx={x(p.at).toFixed(1)} cy={y(p[key]).toFixed(1)} r="2.5" fill={color} />
          ))}
          <text x={PAD + 60 + i * 90} y="12" font-size="11" fill={color}>
            {`— ${label}`}
          </text>
        </g>
      ))}
    </svg>
  )
}
