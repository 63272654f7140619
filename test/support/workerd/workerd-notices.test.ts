/**
 * What the workerd tests' output filter holds back: workerd's info notices of refused connections
 * and the two lines each one's fetch adds (as a passing run printed them), and nothing else: not
 * a rejected waitUntil promise, not the Worker's own log lines that mention the same error, not
 * another uncaught error.
 */
import { describe, expect, it } from 'vitest'
import { noticeFilter } from './workerd-notices'

const STACK =
  'stack: /repo/node_modules/@cloudflare/workerd-linux-64/bin/workerd@52008e2 /repo/node_modules/@cloudflare/workerd-linux-64/bin/workerd@5200ac5'
const REFUSED = `exception = kj/async-io-unix.c++:1538: disconnected: connect(): Connection refused\n${STACK}\n`
const LOST = [
  'uncaught exception; source = Uncaught (in promise); stack = Error: Network connection lost.\n',
  `uncaught exception; exception = workerd/jsg/_virtual_includes/iterator/workerd/jsg/value.h:1480: disconnected: jsg.Error: Network connection lost.\n${STACK}\n`,
]

/** What of `lines` passes the filter, in order. */
const passed = (lines: string[]) => {
  const held = noticeFilter()
  return lines.filter((line) => !held(line))
}

describe('workerd notices held back', () => {
  it('a refused connection and the two lines of its fetch, as a passing run printed them', () => {
    expect(passed([REFUSED, ...LOST, REFUSED, REFUSED, ...LOST, ...LOST])).toEqual([])
    const canceled = `exception = workerd/api/streams/internal.c++:2349: disconnected: pump canceled\n${STACK}\n`
    expect(passed([canceled])).toEqual([])
  })

  it('a rejected waitUntil promise (the same two lines, no refused connection of its own) passes', () => {
    expect(passed([REFUSED, ...LOST, ...LOST])).toEqual(LOST)
    expect(passed(LOST)).toEqual(LOST)
  })

  it.each([
    '{"level":"info","msg":"decision","redis":"unavailable","reason":"Error: Network connection lost."}\n',
    'uncaught exception; source = Uncaught (in promise); stack = TypeError: Cannot read properties of undefined\n',
    'exception = kj/async-io-unix.c++:1538: disconnected: connect(): Connection reset by peer\n',
    ' ✓ test/claims/claims.workers.test.ts (25 tests)\n',
  ])('passes %j, even after a refused connection', (line) => {
    expect(passed([REFUSED, line])).toEqual([line])
  })
})
