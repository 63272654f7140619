/**
 * What a test file starts once, before its tests, and stops after them (a testbed, a stack): call
 * {@link forFile} at the top of the file and use what it returns in the tests and hooks. Apart
 * from test/support/origin.ts because it registers vitest hooks, which only work inside a test
 * run (the soak imports origin.ts).
 * @module
 */
import { afterAll, beforeAll } from 'vitest'
import { type OriginTestbed, type OriginTestbedOptions, startOriginTestbed } from './origin'

/**
 * Starts `start()` in a `beforeAll` and `stop`s it in an `afterAll`. The returned object stands in
 * for the started one (its properties are the started one's); used before the `beforeAll` ran, it
 * throws.
 */
export function forFile<T extends object>(
  start: () => Promise<T>,
  stop: (started: T) => Promise<void>,
  timeoutMs?: number,
): T {
  let started: T | undefined
  beforeAll(async () => {
    started = await start()
  }, timeoutMs)
  afterAll(async () => {
    if (started) await stop(started)
  })
  return new Proxy({} as T, {
    get(_target, property) {
      if (!started) throw new Error('started in beforeAll: use it inside a test or a hook')
      return Reflect.get(started, property)
    },
  })
}

/** This file's origin testbed (test/support/origin.ts). */
export function fileTestbed(options: OriginTestbedOptions = {}): OriginTestbed {
  return forFile(
    () => startOriginTestbed(options),
    (bed) => bed.close(),
  )
}
