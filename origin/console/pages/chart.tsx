/**
 * A channel's deliveries over time as an inline SVG (server-rendered, no script): per time step
 * one bar, new, duplicate and rejected stacked on it, so no series hides another (three lines at
 * zero drew over each other). The y axis has its scale at 0, half and the top, the x axis a time
 * every few steps; each bar part says its time and count on hover.
 * @module
 */
import type { FC } from 'hono/jsx'
import type { SeriesPoint } from '../overview'

const W = 1100
const H = 170
const LEFT = 40
const RIGHT = 8
const TOP = 22
const BOTTOM = 20
/** How many times the x axis names at most. */
const X_LABELS = 6

const SERIES = [
  ['forwarded', '#137333', 'new'],
  ['duplicate', '#1a73e8', 'duplicate'],
  ['rejected', '#b3261e', 'rejected'],
] as const

/**
 * The smallest of 2, 4, 10 × 10^k (and 1 × 10^k from 10 on) at or above `n`: a scale whose half
 * is a whole count too.
 */
export function niceCeiling(n: number): number {
  if (n <= 2) return 2
  const magnitude = 10 ** Math.floor(Math.log10(n))
  const step = [1, 2, 4, 10].find((m) => m * magnitude >= n && (m * magnitude) % 2 === 0) ?? 10
  return step * magnitude
}

/** `HH:MM` (UTC), with the day when the range spans more than one. */
function timeLabel(at: Date, withDay: boolean): string {
  const iso = at.toISOString()
  return withDay ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, 16)
}

export const Chart: FC<{ points: SeriesPoint[]; since: Date; until: Date }> = ({
  points,
  since,
  until,
}) => {
  const top = niceCeiling(Math.max(...points.map((p) => p.forwarded + p.duplicate + p.rejected)))
  const plotW = W - LEFT - RIGHT
  const plotH = H - TOP - BOTTOM
  const slot = plotW / Math.max(1, points.length)
  const barW = Math.max(1, slot * 0.8)
  const y = (n: number) => TOP + plotH - (n / top) * plotH
  const withDay = until.getTime() - since.getTime() > 86_400_000
  const every = Math.max(1, Math.ceil(points.length / X_LABELS))
  const totals = SERIES.map(([key]) => points.reduce((sum, p) => sum + p[key], 0))
  return (
    <svg
      width={W}
      height={H}
      viewBox={`0 0 ${W} ${H}`}
      role="img"
      aria-label="deliveries over time: new, duplicate and rejected per time step"
    >
      <rect x="0" y="0" width={W} height={H} fill="#fff" />
      {[0, top / 2, top].map((n) => (
        <g class="y-tick">
          <line
            x1={LEFT}
            y1={y(n)}
            x2={W - RIGHT}
            y2={y(n)}
            stroke={n === 0 ? '#999' : '#eceff3'}
          />
          <text x={LEFT - 4} y={y(n) + 3} font-size="10" fill="#667" text-anchor="end">
            {String(n)}
          </text>
        </g>
      ))}
      {points.map((p, i) => {
        const x = LEFT + i * slot + (slot - barW) / 2
        let base = 0
        return (
          <g>
            {SERIES.map(([key, color, label]) => {
              const n = p[key]
              if (n === 0) return null
              const part = (
                <rect
                  class={`bar ${key}`}
                  x={x.toFixed(1)}
                  y={y(base + n).toFixed(1)}
                  width={barW.toFixed(1)}
                  height={(y(base) - y(base + n)).toFixed(1)}
                  fill={color}
                >
                  <title>{`${timeLabel(p.at, withDay)} ${label}: ${n}`}</title>
                </rect>
              )
              base += n
              return part
            })}
            {i % every === 0 && (
              <text
                class="x-tick"
                x={(x + barW / 2).toFixed(1)}
                y={H - 6}
                font-size="10"
                fill="#667"
                text-anchor="middle"
              >
                {timeLabel(p.at, withDay)}
              </text>
            )}
          </g>
        )
      })}
      {SERIES.map(([, color, label], i) => (
        <g class="legend">
          <rect x={LEFT + i * 130} y="5" width="10" height="10" fill={color} />
          <text x={LEFT + i * 130 + 14} y="14" font-size="11" fill="#1d232a">
            {`${label} (${totals[i]})`}
          </text>
        </g>
      ))}
    </svg>
  )
}
