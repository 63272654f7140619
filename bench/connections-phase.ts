/**
 * What the connection registry costs a request, for `npm run bench` (phase `connections`; issue
 * 30): the verify-only Worker (bench/verify-only-worker.ts: the gateway's own config pick and
 * verifier, then an empty 200) in Miniflare with its CONNECTIONS KV, sent LINE deliveries signed
 * with each bot's own channel secret, one at a time:
 * - on `/webhooks/line/c/:id` with 1 connection in KV (every request after the first a hit of the
 *   isolate's memo), and with 100,000 in KV, each request for a connection not read before (a
 *   memo miss: one KV get, the record's schema, its secret opened, the channel's config built)
 *   and over and over for one of them (a hit);
 * - on the shared `/webhooks/line` with the per-bot variable, 1 bot and 70 bots (every bot's
 *   secret tried: the O(tenants) HMACs a registry removes).
 * Cases alternate in rounds, so a drift in the machine's load favours none. Per case: workerd CPU
 * per request (/proc, bench/cpu.ts; Miniflare's KV store runs in the same workerd process, so a
 * miss's figure includes the store's own work, which in production is not the Worker's CPU) and
 * p50 / p99 from here. Then the time from a change at the origin (a new record version: disabled,
 * then active again) to the Worker enforcing it, under a short memo; and the KV bytes per
 * connection of each kind. About 160 s here, two thirds of it putting the 100,000 into KV.
 * @module
 */
import { kvKeys, secretAad } from '../contract/connection'
import {
  lineBody,
  lineEventId,
  lineMessageId,
  lineRequest,
  lineText,
} from '../local/vendor-deliveries'
import type { WorkerMiniflareHandle } from '../local/worker-runtime'
import { importKeyRing, type KeyRing, newKekEntry, open } from '../shared/envelope'
import { missBreakdown } from './connection-breakdown'
import {
  type CaseFigure,
  type CaseSample,
  type ChangeFigure,
  type ConnectionsReport,
  caseFigure,
  changeFigure,
  compare,
  kindBytes,
} from './connection-figures'
import {
  type LineBot,
  lineBots,
  putRecords,
  sealedRecord,
  typicalSpecs,
} from './connection-records'
import { CpuSampler } from './cpu'
import { round, say, sleep } from './util'

const MANY = 100_000
const VARIABLE_BOTS = 70
const ROUNDS = 5
const PER_ROUND = 400
const WARMUP = 50
/** The memo of the change measurement: short, so a few trials take seconds. */
const CHANGE_MEMO_SECONDS = 2
const CHANGE_TRIALS = 6
const REQUEST_TIMEOUT_MS = 10_000

export type { ConnectionsReport }

export type StartWorker = (vars: Record<string, string>) => Promise<WorkerMiniflareHandle>

const variable = (bots: readonly LineBot[]) =>
  bots.map((b) => `${b.record.account}=${b.secret}`).join(',')

function delivery(url: string, bot: LineBot): Promise<Request> {
  const event = lineText(lineMessageId(), 'hi', { webhookEventId: lineEventId() })
  return lineRequest(url, lineBody([event], bot.record.account), bot.secret)
}

async function send(request: Request): Promise<CaseSample> {
  const started = performance.now()
  const response = await fetch(request, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  await response.arrayBuffer()
  return { ms: performance.now() - started, status: response.status }
}

/** A case: where it sends, and which bot each of its requests is for. */
interface Case {
  name: string
  label: string
  worker: WorkerMiniflareHandle
  url(bot: LineBot): string
  bot(i: number): LineBot
}

export async function measureConnections(start: StartWorker): Promise<ConnectionsReport> {
  const keks = newKekEntry('bench')
  const ring = await importKeyRing(keks)
  if (!ring) throw new Error('connections: no key ring')
  const sealStarted = performance.now()
  const bots = lineBots(keks, MANY)
  const sealS = (performance.now() - sealStarted) / 1000
  const [one] = bots
  if (!one) throw new Error('connections: no bots')
  await assertOpens(ring, one)
  const base = { EDGE_KEKS: keks }
  const [single, many] = await Promise.all([
    start({ ...base, LINE_CHANNEL_SECRETS_BY_DESTINATION: variable([one]) }),
    start({ ...base, LINE_CHANNEL_SECRETS_BY_DESTINATION: variable(bots.slice(0, VARIABLE_BOTS)) }),
  ])
  try {
    await (await single.miniflare.getKVNamespace('CONNECTIONS')).put(
      kvKeys.connection(one.record.id),
      JSON.stringify(one.record),
    )
    const putStarted = performance.now()
    await putRecords(
      `${many.url}/bench/connections`,
      bots.map((b) => b.record),
    )
    const putS = (performance.now() - putStarted) / 1000
    const fill = {
      records: MANY,
      sealS: round(sealS, 1),
      putS: round(putS, 1),
      putsPerS: round(MANY / putS, 0),
    }
    say(
      `connections: ${MANY.toLocaleString('en-US')} records sealed in ${fill.sealS} s, put in ${fill.putS} s`,
    )
    const route = (w: WorkerMiniflareHandle) => (bot: LineBot) =>
      `${w.url}/webhooks/line/c/${bot.record.id}`
    const shared = (w: WorkerMiniflareHandle) => () => `${w.url}/webhooks/line`
    // Misses walk the 100,000 from the far end: no request reads a connection read before.
    let missed = 0
    const cases: Case[] = [
      {
        name: 'route-1',
        label: 'connection route, 1 in KV',
        worker: single,
        url: route(single),
        bot: () => one,
      },
      {
        name: 'route-100k-miss',
        label: `connection route, ${MANY.toLocaleString('en-US')} in KV, memo miss`,
        worker: many,
        url: route(many),
        bot: () => bots[bots.length - 1 - missed++] as LineBot,
      },
      {
        name: 'route-100k-hit',
        label: `connection route, ${MANY.toLocaleString('en-US')} in KV, memo hit`,
        worker: many,
        url: route(many),
        bot: () => one,
      },
      {
        name: 'variables-1',
        label: 'shared path, 1 bot in the variable',
        worker: single,
        url: shared(single),
        bot: () => one,
      },
      {
        name: `variables-${VARIABLE_BOTS}`,
        label: `shared path, ${VARIABLE_BOTS} bots in the variable`,
        worker: many,
        url: shared(many),
        // The bots of the variable in turn: each verifies after every bot's HMAC.
        bot: (i) => bots[i % VARIABLE_BOTS] as LineBot,
      },
    ]
    const figures = await runCases(cases)
    const [r1, miss, hit, v1, v70] = figures as [
      CaseFigure,
      CaseFigure,
      CaseFigure,
      CaseFigure,
      CaseFigure,
    ]
    const comparisons = [
      compare(miss, r1),
      compare(hit, r1),
      compare(miss, hit),
      compare(v70, v1),
      compare(v70, miss),
    ]
    const breakdown = await missBreakdown(many.url, JSON.stringify(one.record))
    await Promise.all([single.stop(), many.stop()])
    const change = await measureChange(start, keks, ring)
    const bytes = await Promise.all(
      typicalSpecs().map(async (spec) => kindBytes(await sealedRecord(ring, spec))),
    )
    return {
      runtime: 'workerd (Miniflare), verify-only Worker',
      fill,
      cases: figures,
      comparisons,
      change,
      bytes,
      breakdown,
    }
  } finally {
    await Promise.all([single.stop(), many.stop()])
  }
}

/** The quick sealer's output opens with the Worker's own `open`, to the bot's secret. */
async function assertOpens(ring: KeyRing, bot: LineBot): Promise<void> {
  const [secret] = bot.record.secrets
  if (!secret) throw new Error('connections: a record without its secret')
  const aad = secretAad(bot.record.id, secret.field, secret.kid)
  if ((await open(ring, secret.sealed, aad)) !== bot.secret) {
    throw new Error('connections: a quickly sealed secret does not open to itself')
  }
}

async function runCases(cases: readonly Case[]): Promise<CaseFigure[]> {
  const samples = cases.map(() => [] as CaseSample[])
  const rounds = cases.map(() => [] as Array<{ cpuMs: number; requests: number }>)
  let sent = 0
  const batch = async (c: Case, n: number) => {
    // Signed before the clock starts: the signing is Node's work, not the Worker's.
    const requests = await Promise.all(
      Array.from({ length: n }, () => {
        const bot = c.bot(sent++)
        return delivery(c.url(bot), bot)
      }),
    )
    const sampler = new CpuSampler([{ name: 'workerd', pids: () => c.worker.runtimePids }])
    const before = await sampler.read()
    const out: CaseSample[] = []
    for (const request of requests) out.push(await send(request))
    const cpuMs = (await sampler.since(before)).workerd ?? 0
    return { out, cpuMs }
  }
  for (const c of cases) await batch(c, WARMUP)
  for (let round = 0; round < ROUNDS; round++) {
    // Which case goes first turns each round.
    for (let k = 0; k < cases.length; k++) {
      const i = (k + round) % cases.length
      const c = cases[i] as Case
      const { out, cpuMs } = await batch(c, PER_ROUND)
      samples[i]?.push(...out)
      rounds[i]?.push({ cpuMs, requests: out.length })
    }
  }
  return cases.map((c, i) => caseFigure(c.name, c.label, samples[i] ?? [], rounds[i] ?? []))
}

/**
 * A change at the origin to the Worker enforcing it: a new version of the connection (disabled,
 * then active again) put into KV, requests sent back to back until the answer follows (403, then
 * 200), under CONNECTION_CACHE_SECONDS={@link CHANGE_MEMO_SECONDS}.
 */
async function measureChange(
  start: StartWorker,
  keks: string,
  ring: KeyRing,
): Promise<ChangeFigure> {
  const worker = await start({
    EDGE_KEKS: keks,
    CONNECTION_CACHE_SECONDS: String(CHANGE_MEMO_SECONDS),
  })
  try {
    const kv = await worker.miniflare.getKVNamespace('CONNECTIONS')
    const secret = 'bench-change-secret-0123456789ab'
    const spec = {
      channel: 'line' as const,
      account: `U${'ab'.repeat(16)}`,
      secrets: { channel_secret: secret },
    }
    let record = await sealedRecord(ring, spec)
    const bot = () => ({ record, secret })
    const put = () => kv.put(kvKeys.connection(record.id), JSON.stringify(record))
    const status = async () =>
      (await send(await delivery(`${worker.url}/webhooks/line/c/${record.id}`, bot()))).status
    await put()
    if ((await status()) !== 200) throw new Error('connections: the change record did not verify')
    const trials: number[] = []
    for (let i = 0; i < CHANGE_TRIALS; i++) {
      // A random point of the memo's life, as a change at the origin meets it.
      await sleep(Math.random() * CHANGE_MEMO_SECONDS * 1000)
      const disable = i % 2 === 0
      record = await sealedRecord(ring, {
        ...spec,
        id: record.id,
        version: record.version + 1,
        status: disable ? 'disabled' : 'active',
      })
      const want = disable ? 403 : 200
      const started = performance.now()
      await put()
      const deadline = started + (CHANGE_MEMO_SECONDS + 10) * 1000
      while ((await status()) !== want) {
        if (performance.now() > deadline)
          throw new Error('connections: a change was not enforced in time')
      }
      trials.push(performance.now() - started)
    }
    const figure = changeFigure(CHANGE_MEMO_SECONDS, trials)
    say(
      `connections: a change enforced in ${figure.medianMs} ms (median), at most ${figure.maxMs} ms`,
    )
    return figure
  } finally {
    await worker.stop()
  }
}
