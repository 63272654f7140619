/**
 * Where the CPU goes during a step, per component (workerd, origin, Postgres backends of the bench
 * database, Redis, this process with the Upstash stand-in and the Neon proxy, the load generator):
 * user + system time read from /proc before and after. On a 2-core machine this says more about
 * the bottleneck than any single profile. Linux only; elsewhere every reading is empty.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { readStat } from '../local/proc'

/** A component and how to find its processes at the moment of a reading. */
export interface CpuGroup {
  name: string
  pids(): Promise<number[]> | number[]
}

/** CPU milliseconds used per component between two readings. */
export type CpuUsage = Record<string, number>

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
  async read(): Promise<Map<string, Map<number, number>>> {
    const reading = new Map<string, Map<number, number>>()
    for (const group of this.groups) {
      const perPid = new Map<number, number>()
      let pids: number[] = []
      try {
        pids = await group.pids()
      } catch {
        // A component that cannot be listed right now (e.g. Postgres unreachable) reads as empty.
      }
      for (const pid of pids) {
        const stat = readStat(pid)
        if (stat) perPid.set(pid, (stat.ticks * 1000) / TICKS_PER_SECOND)
      }
      reading.set(group.name, perPid)
    }
    return reading
  }

  /**
   * CPU ms per component since `before`. Only processes present in both readings count (a process
   * that ended in between took its time with it; one that started counts from zero).
   */
  async since(before: Map<string, Map<number, number>>): Promise<CpuUsage> {
    const after = await this.read()
    const usage: CpuUsage = {}
    for (const [name, perPid] of after) {
      const start = before.get(name) ?? new Map<number, number>()
      let total = 0
      for (const [pid, ms] of perPid) total += ms - (start.get(pid) ?? 0)
      usage[name] = Math.max(0, Math.round(total))
    }
    return usage
  }
}
