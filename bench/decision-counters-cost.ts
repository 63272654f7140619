/**
 * `npm run bench:decision-counters`: what counting a decision costs a delivery on the hot path
 * (bench/decision-tally-loop.ts, the loop `npm run bench` times in workerd), measured in this
 * Node process (V8, as workerd): a micro-measurement, not a run of the gateway. The flush is not
 * on the hot path (one subrequest per isolate and DECISION_FLUSH_SECONDS, after the answer).
 * @module
 */
import { tallyDecisions } from './decision-tally-loop'

const CALLS = 1_000_000

function run(): number {
  const started = process.hrtime.bigint()
  tallyDecisions(CALLS, Date.now())
  return Number(process.hrtime.bigint() - started) / CALLS
}

run() // warm-up
const ns = [run(), run(), run()].sort((a, b) => a - b)
console.log(
  `decision counters (tallyDecision): ${ns[1]?.toFixed(0)} ns per decision in Node (median of 3 runs of ${CALLS.toLocaleString('en')})`,
)
