/**
 * What the edge accepts, Postgres stores: every event the contract's validation takes
 * (`parseInboundEvent`, which every channel, email and `POST /v1/messages` run before any 2xx or
 * 202) is one the origin's `POST /v1/events` and its real ingest (origin/ingest.ts,
 * `ingest_message()` and the edit and delete statements) store on a real Postgres. Property-based: times at the edges of the
 * calendar and of Postgres's range (30 February, 29 February of years that are and are not leap,
 * the year 0000, offsets past ±15:59, the last second of 9999), integers at the edges of
 * `safeInteger` and `bigint`, strings at their length bounds in characters of three and four UTF-8
 * bytes, with NUL and lone surrogates, structured content with awkward keys and numbers. An
 * event the validation refuses is never ingested; one it takes must not meet a Postgres error.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  ATTACHMENT_KINDS,
  finalizeEvent,
  type InboundEventDraft,
  LIMITS,
  parseInboundEvent,
} from '../../contract/event'
import { isStorableTime } from '../../contract/storable-time'
import { fileTestbed } from '../support/for-file'

const bed = fileTestbed()

const pad = (n: number, width: number) => String(n).padStart(width, '0')

/** A time of valibot's isoTimestamp form, its parts drawn at and past the calendar's edges. */
const isoForm = fc
  .record({
    year: fc.oneof(
      fc.constantFrom(0, 1, 2, 99, 100, 1900, 2000, 2023, 2024, 9998, 9999),
      fc.integer({ min: 0, max: 9999 }),
    ),
    month: fc.oneof(fc.constantFrom(1, 2, 4, 12), fc.integer({ min: 1, max: 12 })),
    day: fc.oneof(fc.constantFrom(1, 28, 29, 30, 31), fc.integer({ min: 1, max: 31 })),
    hour: fc.constantFrom(0, 12, 23),
    minute: fc.constantFrom(0, 59),
    second: fc.constantFrom(0, 59),
    fraction: fc.constantFrom('', '.5', '.999999', '.9999999', '.999999999'),
    separator: fc.constantFrom('T', ' '),
    offset: fc.oneof(
      fc.constant('Z'),
      fc
        .record({
          space: fc.constantFrom('', ' '),
          sign: fc.constantFrom('+', '-'),
          hours: fc.constantFrom(0, 1, 14, 15, 16, 23),
          minutes: fc.constantFrom(0, 30, 59),
          colon: fc.constantFrom(':', ''),
        })
        .map((o) => `${o.space}${o.sign}${pad(o.hours, 2)}${o.colon}${pad(o.minutes, 2)}`),
    ),
  })
  .map(
    (t) =>
      `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}${t.separator}${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}${t.fraction}${t.offset}`,
  )

/** Characters of every UTF-8 width, NUL and lone surrogates among them. */
const awkwardChar = fc.oneof(
  fc.constantFrom('\u0000', '\ud800', '\udfff', 'a', 'é', '中', '\uffff', '😀', '\\', "'", '"'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
)
/** Mostly short strings of any character; at times one at `max` UTF-16 units (a 😀 is two). */
const awkwardText = (max: number, min = 0) =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.string({ unit: awkwardChar, minLength: min, maxLength: Math.min(max, 40) }),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('中', '😀', 'a', '\u0000', '\ud800')
        .map((char) => char.repeat(Math.max(1, Math.floor(max / char.length)))),
    },
  )

/** Random wide characters compress badly: the worst case for an index entry. */
const wideText = (chars: number) =>
  fc.string({
    unit: fc.integer({ min: 0x4e00, max: 0x9fff }).map((c) => String.fromCharCode(c)),
    minLength: chars,
    maxLength: chars,
  })

/**
 * A key: short, or at its bounds in characters (512) and, for a tenant and a sender, in UTF-8
 * bytes (1,024), or past them.
 */
const awkwardKey = (maxUnits: number = LIMITS.key) =>
  fc.oneof(
    { weight: 6, arbitrary: awkwardText(40, 1) },
    { weight: 1, arbitrary: wideText(Math.floor(LIMITS.identityBytes / 3)) },
    { weight: 1, arbitrary: wideText(Math.floor(LIMITS.identityBytes / 3) + 1) },
    { weight: 1, arbitrary: fc.constant('😀'.repeat(Math.floor(maxUnits / 2))) },
    { weight: 1, arbitrary: fc.constant('a'.repeat(maxUnits)) },
    // At the character bound in three-byte characters: 1,536 bytes, past the identity bound.
    { weight: 2, arbitrary: wideText(maxUnits) },
  )

/** Integers at the edges of int, safeInteger and bigint, and numbers that are none. */
const integerEdge = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(0, 1, 2 ** 31 - 1, 2 ** 31, Number.MAX_SAFE_INTEGER) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(-1, Number.MAX_SAFE_INTEGER + 1, 2 ** 63, 1.5, Number.NaN),
  },
)

const content = fc.dictionary(
  awkwardText(20),
  fc.oneof(awkwardText(30), integerEdge, fc.constant(1e308), fc.constant(-0)),
  { maxKeys: 4 },
)

const attachment = fc.record(
  {
    kind: fc.constantFrom(...ATTACHMENT_KINDS),
    mediaId: awkwardKey(),
    url: awkwardText(LIMITS.url),
    mimeType: awkwardText(LIMITS.name),
    size: integerEdge,
    fileName: awkwardText(LIMITS.subject),
    caption: awkwardText(100),
    content,
  },
  { requiredKeys: ['kind'] },
)

const draft: fc.Arbitrary<InboundEventDraft> = fc
  .record({
    kind: fc.constantFrom('message', 'edit', 'delete') as fc.Arbitrary<InboundEventDraft['kind']>,
    channel: fc.constantFrom('slack', 'email', 'wechat', 'api', 'a-new-channel'),
    tenant: awkwardKey(LIMITS.key - 2),
    id: awkwardKey(),
    deliveryKey: awkwardKey(),
    externalId: awkwardKey(),
    displayName: fc.option(awkwardText(LIMITS.name), { nil: undefined }),
    body: fc.oneof(awkwardText(200), awkwardText(LIMITS.body)),
    occurredAt: fc.oneof(
      isoForm,
      // An ordinary time of the whole range, as a vendor's clock would give it.
      fc
        .date({
          min: new Date('0001-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:58Z'),
          noInvalidDate: true,
        })
        .map((date) => date.toISOString()),
    ),
    editSeq: fc.option(integerEdge, { nil: undefined }),
    subject: fc.option(awkwardText(LIMITS.subject), { nil: undefined }),
    references: fc.option(fc.array(awkwardKey(), { maxLength: 3 }), {
      nil: undefined,
    }),
    attachments: fc.option(fc.array(attachment, { maxLength: 3 }), { nil: undefined }),
  })
  .map((d) => {
    // The message key is the tenant's (`{tenant}:…`), within its bound.
    const messageKey = `${d.tenant}:${d.id}`.slice(0, LIMITS.key)
    return {
      kind: d.kind,
      channel: d.channel,
      tenant: d.tenant,
      deliveryKey: d.deliveryKey,
      messageKey,
      sender: {
        externalId: d.externalId,
        ...(d.displayName ? { displayName: d.displayName } : {}),
      },
      body: d.body,
      occurredAt: d.occurredAt,
      ...(d.editSeq === undefined ? {} : { editSeq: d.editSeq }),
      ...(d.subject === undefined ? {} : { subject: d.subject }),
      ...(d.references === undefined ? {} : { references: d.references }),
      ...(d.attachments === undefined ? {} : { attachments: d.attachments }),
    } as InboundEventDraft
  })

describe('what the edge accepts, Postgres stores', () => {
  it('the times Postgres refuses are refused; its edges are taken', async () => {
    // Postgres refuses these (22008: out of range, a displacement past ±15:59).
    const pgRefuses = [
      '2026-02-30T10:00:00Z',
      '0000-06-01T00:00:00Z',
      '2023-02-29T00:00:00Z',
      '1900-02-29T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-01-01T00:00:00+16:00',
      '2026-01-01T00:00:00-23:59',
    ]
    // Postgres takes these, but their UTC form leaves the years 1-9999 (10000-01-01, 1 BC).
    const outsideYears = ['9999-12-31T23:59:59.9999999Z', '0001-01-01T00:00:00+00:01']
    const taken = [
      '2024-02-29T00:00:00Z',
      '2000-02-29T23:59:59.999999999+15:59',
      '0001-01-01T00:00:00Z',
      '0001-01-01T00:00:00-15:59',
      '9999-12-31T23:59:58Z',
      '2026-12-03 18:00:00 +0530',
    ]
    expect([...pgRefuses, ...outsideYears].filter(isStorableTime)).toEqual([])
    expect(taken.filter((t) => !isStorableTime(t))).toEqual([])
    const pgTakes = (time: string) =>
      bed.sql.query('SELECT $1::timestamptz AS at', [time]).then(
        () => true,
        () => false,
      )
    for (const time of pgRefuses) expect(await pgTakes(time)).toBe(false)
    for (const time of taken) expect(await pgTakes(time)).toBe(true)
  })

  it('every generated event the validation takes is stored by the real ingest', async () => {
    let taken = 0
    let refused = 0
    await fc.assert(
      fc.asyncProperty(draft, async (generated) => {
        const valid = parseInboundEvent(await finalizeEvent(generated))
        if (!valid.ok) {
          refused++
          return
        }
        taken++
        // The origin's own route and ingest: any Postgres error (22xxx, 54000, 23514, …) is its
        // 400 or 5xx, never its 2xx.
        const { status } = await bed.post(valid.event)
        expect(status).toBeLessThan(300)
      }),
      {
        numRuns: 400,
        seed: Number(process.env.STORABLE_SEED ?? Date.now() % 2 ** 31),
        // Shrinking a failure among large strings is slow: the failure stands at what it reached.
        interruptAfterTimeLimit: 60_000,
        markInterruptAsFailure: true,
      },
    )
    console.log('TAKEN', taken, refused)
    // Both sides of the validation were exercised.
    expect(taken).toBeGreaterThan(30)
    expect(refused).toBeGreaterThan(30)
  }, 120_000)
})
