/**
 * Whether a process id is alive (signal 0): the dev stack's file (failures/dev-stack.ts) and
 * PGlite's lock of its data directory (local/pglite.ts) both go stale when their writer dies.
 * @module
 */

/** EPERM means alive, someone else's. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
