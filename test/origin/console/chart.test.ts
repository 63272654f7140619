/**
 * The overview's chart, rendered as the console serves it: each count of each series is a bar
 * part of its own, stacked so that none covers another (three lines at zero drew over each other),
 * and both axes are labelled along their length, not only at their ends.
 */
import { describe, expect, it } from 'vitest'
import type { SeriesPoint } from '../../../origin/console/overview'
import { Chart, niceCeiling } from '../../../origin/console/pages/chart'

const since = new Date('2026-12-03T10:00:00Z')
const until = new Date('2026-12-03T11:00:00Z')

function points(values: Array<[number, number, number]>): SeriesPoint[] {
  return values.map(([forwarded, duplicate, rejected], i) => ({
    at: new Date(since.getTime() + i * 60_000),
    forwarded,
    duplicate,
    rejected,
  }))
}

const render = (series: SeriesPoint[]) => String(Chart({ points: series, since, until }))
const attr = (tag: string, name: string) => Number(new RegExp(`${name}="([^"]+)"`).exec(tag)?.[1])

describe('the overview chart', () => {
  it('one bar part per count, stacked: no series hides another', () => {
    const series = points([
      ...Array.from({ length: 58 }, () => [0, 0, 0] as [number, number, number]),
      [3, 0, 0],
      [2, 5, 1],
    ])
    const svg = render(series)
    const bars = [...svg.matchAll(/<rect class="bar (\w+)"[^>]*>/g)]
    expect(bars.map((b) => b[1])).toEqual(['forwarded', 'forwarded', 'duplicate', 'rejected'])
    // The last step's three parts share an x and touch without overlapping, bottom to top.
    const last = bars.slice(1).map((b) => ({ y: attr(b[0], 'y'), h: attr(b[0], 'height') }))
    for (let i = 1; i < last.length; i++) {
      const below = last[i - 1] as { y: number; h: number }
      const above = last[i] as { y: number; h: number }
      expect(above.y + above.h).toBeCloseTo(below.y, 0)
    }
    expect(svg).toContain('<title>10:59 duplicate: 5</title>')
    expect(svg).toContain('new (5)')
  })

  it('the y axis at 0, half and the top; the x axis every few steps', () => {
    const svg = render(points(Array.from({ length: 60 }, (_, i) => [i % 7, 0, 0])))
    const yTicks = [...svg.matchAll(/<g class="y-tick">.*?<text[^>]*>([^<]+)<\/text>/g)].map(
      (m) => m[1],
    )
    expect(yTicks).toEqual(['0', '5', '10'])
    const xTicks = [...svg.matchAll(/<text class="x-tick"[^>]*>([^<]+)<\/text>/g)].map((m) => m[1])
    expect(xTicks).toEqual(['10:00', '10:10', '10:20', '10:30', '10:40', '10:50'])
  })

  it('a scale whose half is a whole count', () => {
    expect([0, 1, 3, 5, 11, 41, 101].map(niceCeiling)).toEqual([2, 2, 4, 10, 20, 100, 200])
  })
})
