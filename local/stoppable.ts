/**
 * A piece of a local stack that can be stopped (a database layer, a Redis layer, an origin, the
 * Worker, the stack itself), and the guard that makes stopping twice harmless.
 * @module
 */

/** A piece of a stack that can be stopped; stopping twice is harmless. */
export interface Stoppable {
  stop(): Promise<void>
}

/** `fn` run at most once; later calls get the first call's promise. */
export function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined
  return () => {
    done ??= fn()
    return done
  }
}
