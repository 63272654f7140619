/**
 * Where the CPU goes during a step, per component (workerd, origin, Postgres backends of the bench
 * database, Redis, this process with the Upstash stand-in and the Neon proxy, the load generator):
 * user + system time read from /proc before and after. On a 2-core machine this says more about
 * the bottleneck than any single profile. Linux only; elsewhere every reading is empty.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** A component and how to find its processes at the moment of a reading. */
export interface CpuGroup {
  name: string
  pids(): Promise<number[]> | number[]
}

/** CPU milliseconds used per component between two readings. */
export type CpuUsage = Record<string, number>

interface ProcStat {
  pid: number
  ppid: number
  pgrp: number
  comm: string
  /** utime + stime, clock ticks. */
  ticks: number
}

const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

function readStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // comm may hold spaces and parentheses: everything after the last ')' is fixed fields.
    const close = text.lastIndexOf(')')
    const comm = text.slice(text.indexOf('(') + 1, close)
    const fields = text.slice(close + 2).split(' ')
    // fields[0] = state (field 3); ppid 4, pgrp 5, utime 14, stime 15.
    return {
      pid,
      comm,
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      ticks: Number(fields[11]) + Number(fields[12]),
    }
  } catch {
    return null
  }
}

/** Every process visible in /proc (empty where there is no /proc). */
export function listProcesses(): ProcStat[] {
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return []
  }
  const out: ProcStat[] = []
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readStat(Number(entry))
    if (stat) out.push(stat)
  }
  return out
}

/** Pids of the processes in a process group (a GroupProcess and everything it started). */
export function groupPids(pgrp: number): number[] {
  return listProcesses()
    .filter((p) => p.pgrp === pgrp)
    .map((p) => p.pid)
}

/** Pids of this process's children named `comm` (Miniflare's workerd). */
export function childPids(comm: string): number[] {
  return listProcesses()
    .filter((p) => p.ppid === process.pid && p.comm === comm)
    .map((p) => p.pid)
}

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
