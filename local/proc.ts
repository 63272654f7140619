/**
 * What Linux's /proc says about processes: their parent, group, name and CPU ticks. The stack
 * finds the workerd processes Miniflare started with it ({@link childPids}); the bench reads CPU
 * time per component. Elsewhere than Linux every answer is empty.
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs'

export interface ProcStat {
  pid: number
  ppid: number
  pgrp: number
  comm: string
  /** utime + stime, clock ticks. */
  ticks: number
  /** cutime + cstime: the CPU of children that exited and were waited for, clock ticks. */
  reapedTicks: number
}

export function readStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // comm may hold spaces and parentheses: everything after the last ')' is fixed fields.
    const close = text.lastIndexOf(')')
    const comm = text.slice(text.indexOf('(') + 1, close)
    const fields = text.slice(close + 2).split(' ')
    // fields[0] = state (field 3); ppid 4, pgrp 5, utime 14, stime 15, cutime 16, cstime 17.
    return {
      pid,
      comm,
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      ticks: Number(fields[11]) + Number(fields[12]),
      reapedTicks: Number(fields[13]) + Number(fields[14]),
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

/** Pids of the processes whose parent is `ppid` (Postgres's backends: children of its postmaster). */
export function childrenOf(ppid: number): number[] {
  return listProcesses()
    .filter((p) => p.ppid === ppid)
    .map((p) => p.pid)
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
