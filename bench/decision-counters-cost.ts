/**
 * `npm run bench:decision-counters`: what counting a decision costs a delivery on the hot path
 * (DecisionTally.add, which worker/decision-counters.ts calls once per decision), measured in this
 * Node process (V8, as workerd): a micro-measurement, not a run of the gateway. The flush is not
 * on the hot path (one subrequest per isolate and DECISION_FLUSH_SECONDS, after the answer).
 * @module
 */
import { DecisionTally } from '../contract/decision-counts'

const CALLS = 1_000_000
const CHANNELS = ['slack', 'twilio', 'telegram', 'whatsapp-cloud']
const DECISIONS = ['forwarded', 'duplicate', 'duplicate', 'rejected']

function run(): number {
  const tally = new DecisionTally()
  const now = Date.now()
  const started = process.hrtime.bigint()
  for (let i = 0; i < CALLS; i++) {
    tally.add(
      {
        channel: CHANNELS[i % 4] as string,
        decision: DECISIONS[i % 4] as string,
        decidedBy: 'redis',
        deliveryKey: `dedup:slack:A1:Ev${i}`,
        ms: i % 300,
      },
      now + i,
    )
    // A flush every 10,000 decisions, as an isolate would every few seconds.
    if (i % 10_000 === 0) tally.take()
  }
  return Number(process.hrtime.bigint() - started) / CALLS
}

run() // warm-up
const ns = [run(), run(), run()].sort((a, b) => a - b)
console.log(
  `DecisionTally.add: ${ns[1]?.toFixed(0)} ns per decision (median of 3 runs of ${CALLS.toLocaleString('en')})`,
)
