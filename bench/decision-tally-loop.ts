/**
 * What the decision counters cost a delivery, as one loop run in both runtimes: N decisions
 * through the Worker's own hot-path call (tallyDecision: the reason check and the map update
 * countDecision does per delivery), a mix of channels and decisions, taken every 10,000 as an
 * isolate's flush would. `npm run bench:decision-counters` times it in Node; `npm run bench`
 * (bench/decision-counters-phase.ts) in workerd, through the verify-only Worker.
 * @module
 */
import { DecisionTally } from '../contract/decision-counts'
import { tallyDecision } from '../worker/decision-counters'

const CHANNELS = ['slack', 'twilio', 'telegram', 'whatsapp-cloud']
const DECISIONS = ['forwarded', 'duplicate', 'duplicate', 'rejected']
/** Decisions between two takes: an isolate flushing every few seconds at a few thousand/s. */
const TAKE_EVERY = 10_000

export function tallyDecisions(calls: number, nowMs: number): void {
  const tally = new DecisionTally()
  for (let i = 0; i < calls; i++) {
    tallyDecision(
      tally,
      {
        channel: CHANNELS[i % 4] as string,
        decision: DECISIONS[i % 4] as string,
        decidedBy: 'redis',
        reason: i % 4 === 3 ? 'bad_signature' : undefined,
        deliveryKey: `dedup:slack:A1:Ev${i}`,
        ms: i % 300,
      },
      nowMs + i,
    )
    if (i % TAKE_EVERY === 0) tally.take()
  }
}
