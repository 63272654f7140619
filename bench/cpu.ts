/**
 * Where the CPU goes during a step, per component (workerd, origin, every process of the Postgres
 * server, those that exited during the step included, Redis, this process with the Upstash
 * stand-in and the Neon proxy, the load generator): user + system time read from /proc before and
 * after. On a 2-core machine this says more about the bottleneck than any single profile. Linux
 * only; elsewhere every reading is empty.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { readStat } from '../local/proc'

/** A component and how to find its processes at the moment of a reading. */
export interface CpuGroup {
  name: string
  pids(): Promise<number[]> | number[]
  /**
   * The process that waits for this component's processes when they exit (Postgres's postmaster
   * for its backends), when `pids` lists every one of its children. Then a process that exits
   * between two readings still counts: its time moves into the reaper's children's time, which
   * the reading adds. Without it, only processes alive at the second reading count.
   */
  reaper?(): Promise<number | null> | number | null
}

/** CPU milliseconds used per component between two readings. */
export type CpuUsage = Record<string, number>

/** One component at one moment: each live process's CPU ms, and its reaper's exited children's. */
interface GroupReading {
  perPid: Map<number, number>
  reapedMs: number | null
}

export type CpuReading = Map<string, GroupReading>

const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

export class CpuSampler {
  constructor(private readonly groups: CpuGroup[]) {}

  /** Cumulative CPU ms per component now (for {@link CpuSampler.since}). */
  async read(): Promise<CpuReading> {
    const reading: CpuReading = new Map()
    for (const group of this.groups) {
      const perPid = new Map<number, number>()
      let pids: number[] = []
      let reaper: number | null = null
      try {
        pids = await group.pids()
        reaper = (await group.reaper?.()) ?? null
      } catch {
        // A component that cannot be listed right now (e.g. Postgres unreachable) reads as empty.
      }
      for (const pid of pids) {
        const stat = readStat(pid)
        if (stat) perPid.set(pid, ticksToMs(stat.ticks))
      }
      const reaped = reaper === null ? null : readStat(reaper)
      reading.set(group.name, { perPid, reapedMs: reaped ? ticksToMs(reaped.reapedTicks) : null })
    }
    return reading
  }

  /**
   * CPU ms per component since `before`. A component with a reaper read both times: everything its
   * processes used, those that exited in between included. Otherwise only processes present at the
   * second reading count (one that ended in between took its time with it; one that started
   * counts from zero).
   */
  async since(before: CpuReading): Promise<CpuUsage> {
    const after = await this.read()
    const usage: CpuUsage = {}
    for (const [name, now] of after) {
      const then = before.get(name) ?? { perPid: new Map<number, number>(), reapedMs: null }
      let total = 0
      if (now.reapedMs !== null && then.reapedMs !== null) {
        total = sum(now.perPid) + now.reapedMs - (sum(then.perPid) + then.reapedMs)
      } else {
        for (const [pid, ms] of now.perPid) total += ms - (then.perPid.get(pid) ?? 0)
      }
      usage[name] = Math.max(0, Math.round(total))
    }
    return usage
  }
}

function ticksToMs(ticks: number): number {
  return (ticks * 1000) / TICKS_PER_SECOND
}

function sum(perPid: Map<number, number>): number {
  let total = 0
  for (const ms of perPid.values()) total += ms
  return total
}
