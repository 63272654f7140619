/**
 * Preload for `BENCH_PROFILE=1` (`node --cpu-prof` is refused in NODE_OPTIONS): starts the V8
 * sampling profiler in this process and writes `<BENCH_CPU_PROFILE_DIR>/<pid>.cpuprofile` when the
 * process exits. Loaded with `NODE_OPTIONS=--require <this file>` into the origin's processes.
 * An in-process inspector session answers synchronously, so the write fits in an `exit` handler.
 */
'use strict'
const inspector = require('node:inspector')
const { writeFileSync } = require('node:fs')
const { join } = require('node:path')

const dir = process.env.BENCH_CPU_PROFILE_DIR
if (dir) {
  const session = new inspector.Session()
  session.connect()
  session.post('Profiler.enable')
  session.post('Profiler.setSamplingInterval', { interval: 500 })
  session.post('Profiler.start')
  process.on('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (!err && result) {
        writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile))
      }
    })
  })
}
