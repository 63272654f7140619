/**
 * What an unauthenticated request can cost the Worker before its signature is refused, per
 * channel, for `npm run bench` (phase `pre-verification`): a gateway of its own in Miniflare,
 * configured so that every channel reads the most it may before its verdict
 * (local/crafted-requests.ts: per-tenant Slack and Twilio, both WeChat modes, Teams keys held),
 * is sent each channel's worst forged request of its maximum size and its smallest one, in
 * alternated rounds. Inside workerd the clock stands still while code runs, so the time is taken
 * here, around the request: the worst's wall minus the smallest's, the median of the rounds with
 * their lowest and highest as its noise. It holds reading the body (up to 3 MB for Meta's
 * channels) and whatever runs before the verdict; a few seconds in all.
 * @module
 */
import {
  craftedBindings,
  craftedRequests,
  craftedTeamsKeys,
  publishCraftedKeys,
} from '../local/crafted-requests'
import { startKeyDocuments } from '../local/key-documents'
import { round, say } from './util'

const ROUNDS = 5
const REQUEST_TIMEOUT_MS = 15_000

export interface PreVerificationCost {
  channel: string
  /** The worst request's body. */
  bodyBytes: number
  /** What it was answered (401 or 403: refused). */
  status: number
  /** Median over the rounds of worst − smallest, ms; and the lowest and highest round. */
  extraMs: number
  minMs: number
  maxMs: number
}

/** A Worker started for the phase: its URL, and how to stop it. */
export type StartWorker = (vars: Record<string, string>) => Promise<{
  url: string
  stop(): Promise<unknown>
}>

export async function measurePreVerification(
  startWorker: StartWorker,
  baseVars: Record<string, string>,
): Promise<PreVerificationCost[]> {
  const documents = await startKeyDocuments()
  const keys = await craftedTeamsKeys()
  const metadataUrl = await publishCraftedKeys(`${documents.url}/crafted`, keys)
  const worker = await startWorker({ ...baseVars, ...craftedBindings(metadataUrl) })
  try {
    const costs: PreVerificationCost[] = []
    for (const crafted of craftedRequests(keys)) {
      const send = async (make: (base: string) => Promise<Request>) => {
        const request = await make(worker.url)
        const bodyBytes = (await request.clone().arrayBuffer()).byteLength
        const started = performance.now()
        const response = await fetch(request, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
        await response.arrayBuffer()
        return { ms: performance.now() - started, status: response.status, bodyBytes }
      }
      // Warm-up: settings, the Teams keys' first fetch, the JIT.
      await send(crafted.smallest)
      await send(crafted.worst)
      const rounds: number[] = []
      let last = { status: 0, bodyBytes: 0 }
      for (let i = 0; i < ROUNDS; i++) {
        // Which goes first alternates, so a drift in the machine's load favours neither.
        const first = i % 2 === 0 ? crafted.smallest : crafted.worst
        const second = i % 2 === 0 ? crafted.worst : crafted.smallest
        const a = await send(first)
        const b = await send(second)
        const [worst, smallest] = i % 2 === 0 ? [b, a] : [a, b]
        rounds.push(worst.ms - smallest.ms)
        last = worst
      }
      rounds.sort((x, y) => x - y)
      const cost = {
        channel: crafted.name,
        bodyBytes: last.bodyBytes,
        status: last.status,
        extraMs: round(rounds[Math.floor(ROUNDS / 2)] ?? 0, 2),
        minMs: round(rounds[0] ?? 0, 2),
        maxMs: round(rounds[ROUNDS - 1] ?? 0, 2),
      }
      say(`pre-verification: ${describePreVerification(cost)}`)
      costs.push(cost)
    }
    return costs
  } finally {
    await worker.stop()
    await documents.close()
  }
}

/** "wechat-aes: 262,144 B refused 401, +0.9 ms over the smallest (rounds 0.7–1.2)" */
export function describePreVerification(cost: PreVerificationCost): string {
  return (
    `${cost.channel}: ${cost.bodyBytes.toLocaleString('en-US')} B refused ${cost.status}, ` +
    `+${cost.extraMs} ms over the smallest forged request (rounds ${cost.minMs}–${cost.maxMs}, median of ${ROUNDS})`
  )
}
