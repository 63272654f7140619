/**
 * The Gmail poller against a fake Gmail that follows the documented shapes, with real Postgres
 * (through the Neon proxy) and real Redis (through the Upstash stand-in): full sync, history
 * pages, the 404, labels, OAuth, backoff, leases between pods, and failures that must not stop it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { runId } from '../../local/services'
import { rawEmail } from '../../local/vendor-deliveries'
import type { GmailPoller } from '../../origin/gmail'
import { counterValue } from '../../origin/gmail/metrics'
import { SyncState } from '../../origin/gmail/sync-state'
import { createLogger } from '../../origin/log'
import {
  type FakeGmail,
  type FakeGmailOptions,
  type MessageFault,
  startFakeGmail,
} from '../support/fake-gmail'
import { runFailuresCli } from '../support/origin'
import { emailTestbedForFile } from './support/testbed'

const bed = emailTestbedForFile()
const fakes: FakeGmail[] = []

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

async function fakeGmail(options: Partial<FakeGmailOptions> = {}): Promise<FakeGmail> {
  const fake = await startFakeGmail({ mailbox: `support-${runId()}@inbound.example`, ...options })
  fakes.push(fake)
  return fake
}

const mailboxOf = (fake: FakeGmail) => fake.env.GMAIL_MAILBOX as string

async function storedHistoryId(mailbox: string): Promise<string | null> {
  const { rows } = await bed.db.sql.query(
    'SELECT history_id::text AS id FROM gmail_sync_state WHERE mailbox = $1',
    [mailbox],
  )
  return rows[0]?.id ?? null
}

async function rowsOf(fake: FakeGmail) {
  const rows = await bed.messageRows()
  return rows.filter((r) => r.channel_message_id.startsWith(`${mailboxOf(fake)}:`))
}

/** One poll, completed with these counts; then as {@link expectCaughtUp}. */
async function expectPoll(
  poller: GmailPoller,
  fake: FakeGmail,
  counts: Record<string, unknown>,
  rows: number,
): Promise<void> {
  expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ...counts })
  await expectCaughtUp(fake, rows)
}

/** `rows` rows from the mailbox, and its stored historyId is the mailbox's latest. */
async function expectCaughtUp(fake: FakeGmail, rows: number): Promise<void> {
  expect(await rowsOf(fake)).toHaveLength(rows)
  expect(await storedHistoryId(mailboxOf(fake))).toBe(fake.currentHistoryId())
}

describe('full sync and history', () => {
  it('first run: takes the INBOX, skips SENT and DRAFT, stores the profile historyId', async () => {
    const gmail = await fakeGmail()
    for (let i = 0; i < 3; i++) gmail.deliver(rawEmail({ subject: `inbox ${i}` }))
    gmail.deliver(rawEmail({ subject: 'note to self' }), ['INBOX', 'SENT'])
    gmail.deliver(rawEmail({ subject: 'draft' }), ['DRAFT'])
    const { poller } = bed.poller(gmail)

    await expectPoll(poller, gmail, { mode: 'full_sync', ingested: 3, skipped: 1 }, 3)
    expect(await counterValue(poller.metrics.skipped, { reason: 'label' })).toBe(1)
    expect(await counterValue(poller.metrics.fullSyncs, { reason: 'first_run' })).toBe(1)
    // Every page request named INBOX; the profile was read before the listing.
    const order = gmail
      .requests()
      .filter((r) => r.endpoint !== 'token')
      .map((r) => r.endpoint)
    expect(order[0]).toBe('profile')
    expect(gmail.requests('messages.list').every((r) => r.query.labelIds === 'INBOX')).toBe(true)
  })

  it('then: every history page, labels filtered, historyId stored only after the last page', async () => {
    const gmail = await fakeGmail({ maxPageSize: 3 })
    const { poller } = bed.poller(gmail)
    expect((await poller.pollOnce()).status).toBe('completed')
    const before = await storedHistoryId(mailboxOf(gmail))

    for (let i = 0; i < 7; i++) gmail.deliver(rawEmail({ subject: `new ${i}` }))
    gmail.deliver(rawEmail({ subject: 'sent' }), ['SENT'])
    gmail.deliver(rawEmail({ subject: 'spam' }), ['SPAM'])
    gmail.deliver(rawEmail({ subject: 'trash' }), ['TRASH', 'INBOX'])
    // Page 2 of 4 fails past the retries: nothing may be stored.
    gmail.fail('history', { status: 503, laterPagesOnly: true }, 4)
    const failed = await poller.pollOnce()
    expect(failed).toMatchObject({ status: 'failed', error: 'gmail_unavailable' })
    expect(await storedHistoryId(mailboxOf(gmail))).toBe(before)
    expect(await counterValue(poller.metrics.pollErrors, { reason: 'gmail_unavailable' })).toBe(1)

    const done = await poller.pollOnce()
    expect(done).toMatchObject({ status: 'completed', mode: 'history', ingested: 7, skipped: 3 })
    await expectCaughtUp(gmail, 7)
    const pages = gmail.requests('history').filter((r) => r.status === 200)
    expect(pages.every((r) => r.query.historyTypes === 'messageAdded')).toBe(true)
    expect(pages.at(-1)?.query.pageToken).toBeDefined()
    // The messages the failed poll had taken were taken again: duplicates, not new rows.
    expect(await counterValue(poller.metrics.ingested, { outcome: 'created' })).toBe(7)
  })

  it('history too old (404): full sync, without duplicates', async () => {
    const gmail = await fakeGmail()
    const { poller } = bed.poller(gmail)
    gmail.deliver(rawEmail({ subject: 'old 1' }))
    gmail.deliver(rawEmail({ subject: 'old 2' }))
    await poller.pollOnce()
    gmail.deliver(rawEmail({ subject: 'new 1' }))
    gmail.expireHistory()
    gmail.deliver(rawEmail({ subject: 'new 2' }))

    const result = await poller.pollOnce()

    expect(result).toMatchObject({ status: 'completed', mode: 'full_sync', ingested: 4 })
    expect(gmail.requests('history').map((r) => r.status)).toEqual([404])
    expect(await rowsOf(gmail)).toHaveLength(4)
    expect(
      await counterValue(poller.metrics.ingested, { outcome: 'duplicate', decided_by: 'redis' }),
    ).toBe(2)
    expect(await counterValue(poller.metrics.fullSyncs, { reason: 'history_expired' })).toBe(1)
    expect(await storedHistoryId(mailboxOf(gmail))).toBe(gmail.currentHistoryId())
  })

  it('a backlog beyond one poll is worked off across polls, resuming after the last record', async () => {
    const gmail = await fakeGmail()
    const { poller } = bed.poller(gmail, { limits: { maxMessagesPerPoll: 3 } })
    await poller.pollOnce()
    for (let i = 0; i < 7; i++) gmail.deliver(rawEmail({ subject: `backlog ${i}` }))

    const statuses = [await poller.pollOnce(), await poller.pollOnce(), await poller.pollOnce()]

    expect(statuses.map((s) => [s.status, s.ingested])).toEqual([
      ['partial', 3],
      ['partial', 3],
      ['completed', 1],
    ])
    expect(await rowsOf(gmail)).toHaveLength(7)
    expect(gmail.requests('messages.get')).toHaveLength(7)
  })

  it('without Redis, Postgres decides every message', async () => {
    const gmail = await fakeGmail()
    const { poller } = bed.poller(gmail, { withoutRedis: true })
    gmail.deliver(rawEmail())
    await poller.pollOnce()
    gmail.deliver(rawEmail())
    gmail.expireHistory()
    // The full sync takes the first message again: only the unique index can tell.
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', mode: 'full_sync' })
    expect(await rowsOf(gmail)).toHaveLength(2)
    const duplicates = { outcome: 'duplicate', decided_by: 'postgres' }
    expect(await counterValue(poller.metrics.ingested, duplicates)).toBe(1)
  })
})

describe('OAuth', () => {
  it('reuses the access token, and refreshes it once when the API answers 401', async () => {
    const gmail = await fakeGmail()
    const { poller } = bed.poller(gmail)
    await poller.pollOnce()
    await poller.pollOnce()
    expect(gmail.requests('token')).toHaveLength(1)

    gmail.deliver(rawEmail())
    gmail.revokeAccessTokens()
    const result = await poller.pollOnce()

    expect(result).toMatchObject({ status: 'completed', ingested: 1 })
    expect(gmail.requests('token')).toHaveLength(2)
    const history = gmail.requests('history')
    expect(history.map((r) => r.status).slice(-2)).toEqual([401, 200])
    expect(history.at(-1)?.token).not.toBe(history.at(-2)?.token)
  })

  it('a refresh token Google refuses fails the poll (oauth_failed) and does not stop polling', async () => {
    const gmail = await fakeGmail()
    const running = bed.poller(gmail)
    const broken = bed.poller({ ...gmail, env: { ...gmail.env, GMAIL_REFRESH_TOKEN: 'revoked' } })
    expect(await broken.poller.pollOnce()).toMatchObject({
      status: 'failed',
      error: 'oauth_failed',
    })
    expect(gmail.requests('token').map((r) => r.status)).toEqual([400])
    expect(await running.poller.pollOnce()).toMatchObject({ status: 'completed' })
  })
})

describe('backoff', () => {
  it('429 and 5xx are retried with backoff until they pass', async () => {
    const gmail = await fakeGmail()
    const { poller } = bed.poller(gmail)
    await poller.pollOnce()
    gmail.deliver(rawEmail())
    gmail.fail('messages.get', { status: 429, retryAfter: 1 }, 2)

    const result = await poller.pollOnce()

    expect(result).toMatchObject({ status: 'completed', ingested: 1 })
    expect(gmail.requests('messages.get').map((r) => r.status)).toEqual([429, 429, 200])
    expect(await counterValue(poller.metrics.httpRetries, { reason: 'rate_limited' })).toBe(2)
  })

  it('a failing poll never stops the loop: errors are counted, the next interval tries again', async () => {
    const gmail = await fakeGmail()
    const { poller } = bed.poller(gmail, { pollIntervalMs: 50 })
    gmail.deliver(rawEmail())
    gmail.fail('profile', { status: 500 }, 1_000)
    poller.start()
    await waitFor(async () => (await counterValue(poller.metrics.pollErrors)) >= 2)
    gmail.clearFaults()
    await waitFor(async () => (await rowsOf(gmail)).length === 1)
    await poller.stop()
    expect(
      await counterValue(poller.metrics.pollErrors, { reason: 'gmail_unavailable' }),
    ).toBeGreaterThanOrEqual(2)
  })
})

describe('several origin pods', () => {
  it('two pollers on one mailbox: one at a time holds it, every message stored once', async () => {
    const gmail = await fakeGmail()
    gmail.setLatency(15)
    const a = bed.poller(gmail, { owner: 'pod-a' }).poller
    const b = bed.poller(gmail, { owner: 'pod-b' }).poller
    for (let i = 0; i < 8; i++) gmail.deliver(rawEmail({ subject: `first ${i}` }))

    const results = []
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 3; i++) gmail.deliver(rawEmail({ subject: `round ${round}.${i}` }))
      results.push(...(await Promise.all([a.pollOnce(), b.pollOnce()])))
    }

    expect(await rowsOf(gmail)).toHaveLength(20)
    // Each message was fetched once: no two pollers worked on the mailbox at the same time.
    expect(gmail.requests('messages.get')).toHaveLength(20)
    expect(results.some((r) => r.status === 'busy')).toBe(true)
    const held = results
      .filter((r) => r.heldFrom !== undefined)
      .sort((x, y) => (x.heldFrom ?? 0) - (y.heldFrom ?? 0))
    for (let i = 1; i < held.length; i++) {
      expect(held[i]?.heldFrom).toBeGreaterThanOrEqual(held[i - 1]?.heldUntil ?? 0)
    }
  })

  it('a crashed poller’s lease runs out, and it can no longer store a historyId', async () => {
    const gmail = await fakeGmail()
    const mailbox = mailboxOf(gmail)
    // Another pod's state handle, straight on the database (pg returns {rows}; SyncState wants rows).
    const adapter = {
      query: async <R>(text: string, values?: unknown[]) =>
        (await bed.db.sql.query(text, values)).rows as R[],
    }
    const ghost = new SyncState(adapter, mailbox, 'crashed-pod', 3_000)
    expect(await ghost.acquire()).toEqual({ historyId: null })
    const { poller } = bed.poller(gmail, { owner: 'pod-live' })
    gmail.deliver(rawEmail())
    expect((await poller.pollOnce()).status).toBe('busy')

    await waitFor(async () => (await poller.pollOnce()).status === 'completed')

    expect(await rowsOf(gmail)).toHaveLength(1)
    expect(await ghost.store('1')).toBe(false)
    expect(await storedHistoryId(mailbox)).toBe(gmail.currentHistoryId())
  })
})

/** The inbound failure rows of this fake's mailbox (delivery key `gmail:{mailbox}:{gmail id}`). */
async function failuresOf(fake: FakeGmail) {
  const { rows } = await bed.db.sql.query(
    `SELECT id::text, channel, stage, source, source_ref, delivery_key, status, error,
            message_id::text, event IS NOT NULL AS has_event
       FROM channel_failures WHERE delivery_key LIKE $1 ORDER BY id`,
    [`gmail:${mailboxOf(fake)}:%`],
  )
  return rows
}

/** The first lines' worth of a test email; none of it may reach a log line or a failure row. */
const SECRET_TEXT = 'the account number is 4242-unlogged'
/** Without a From header: parseEmail refuses it (no customer to file it under). */
const noSender = () =>
  rawEmail({ subject: 'no sender', text: SECRET_TEXT }).replace(/^From: .*\r\n/m, '')
const messageGets = (fake: FakeGmail, id: string) =>
  fake.requests('messages.get').filter((r) => r.messageId === id)

describe('one message that cannot be fetched or parsed', () => {
  const MAX_BYTES = 64 * 1024
  const cases: Array<[string, MessageFault | 'no_sender', string]> = [
    ['answers 404', { kind: 'status', status: 404 }, 'not_found'],
    ['answers 400', { kind: 'status', status: 400 }, 'client_error'],
    ['has no raw', { kind: 'no_raw' }, 'no_raw'],
    ['is over the size bound', { kind: 'oversize', bytes: 2 * MAX_BYTES }, 'too_large'],
    ['does not parse', 'no_sender', 'no_sender'],
  ]

  it.each(cases)(
    '%s: the others land, it is recorded once, the historyId moves past it, it is not fetched again',
    async (_, fault, reason) => {
      const gmail = await fakeGmail()
      const lines: string[] = []
      const logger = createLogger({ level: 'debug', write: (line) => lines.push(line) })
      const { poller } = bed.poller(gmail, { logger, limits: { maxMessageBytes: MAX_BYTES } })
      await poller.pollOnce()
      gmail.deliver(rawEmail({ subject: 'before' }))
      const bad = gmail.deliver(
        fault === 'no_sender' ? noSender() : rawEmail({ subject: 'bad', text: SECRET_TEXT }),
      )
      if (fault !== 'no_sender') gmail.breakMessage(bad.id, fault)
      gmail.deliver(rawEmail({ subject: 'after' }))

      await expectPoll(poller, gmail, { mode: 'history', ingested: 2, failures: 1 }, 2)
      const failures = await failuresOf(gmail)
      expect(failures).toMatchObject([
        {
          channel: 'email',
          stage: 'inbound',
          source: 'gmail',
          source_ref: bad.id,
          delivery_key: `gmail:${mailboxOf(gmail)}:${bad.id}`,
          status: 'dead',
          has_event: false,
        },
      ])
      expect(failures[0].error).toMatch(new RegExp(`^${reason}\\b`))
      expect(await counterValue(poller.metrics.failed, { reason })).toBe(1)
      const logged = lines
        .map((line) => JSON.parse(line))
        .find((l) => l.msg === 'gmail message failed')
      expect(logged).toMatchObject({
        level: 'error',
        gmailId: bad.id,
        reason,
        failureId: failures[0].id,
      })
      expect(lines.join('\n')).not.toContain(SECRET_TEXT)
      expect(failures[0].error).not.toContain(SECRET_TEXT)

      gmail.deliver(rawEmail({ subject: 'later' }))
      expect(await poller.pollOnce()).toMatchObject({
        status: 'completed',
        ingested: 1,
        failures: 0,
      })
      expect(messageGets(gmail, bad.id)).toHaveLength(1)
      expect(await rowsOf(gmail)).toHaveLength(3)
    },
  )

  it.each([
    [503, 'gmail_unavailable'],
    [403, 'gmail_unauthorized'],
  ])(
    'a %i for one message fails the poll without advancing; once Gmail answers, everything lands once',
    async (status, error) => {
      const gmail = await fakeGmail()
      const { poller } = bed.poller(gmail)
      await poller.pollOnce()
      const before = await storedHistoryId(mailboxOf(gmail))
      gmail.deliver(rawEmail({ subject: 'first' }))
      const bad = gmail.deliver(noSender())
      const unavailable = gmail.deliver(rawEmail({ subject: 'third' }))
      gmail.breakMessage(unavailable.id, { kind: 'status', status })

      expect(await poller.pollOnce()).toMatchObject({ status: 'failed', error })
      expect(await storedHistoryId(mailboxOf(gmail))).toBe(before)
      expect(await failuresOf(gmail)).toHaveLength(1)
      gmail.repairMessage(unavailable.id)

      // The next poll takes the same history again: the first is a duplicate, the bad one's row is
      // recorded again (the same row: a crash between recording and storing loses nothing).
      expect(await poller.pollOnce()).toMatchObject({
        status: 'completed',
        ingested: 2,
        failures: 1,
      })
      expect(await rowsOf(gmail)).toHaveLength(2)
      expect(await counterValue(poller.metrics.ingested, { outcome: 'created' })).toBe(2)
      expect(await failuresOf(gmail)).toMatchObject([{ source_ref: bad.id, status: 'dead' }])
      expect(await storedHistoryId(mailboxOf(gmail))).toBe(gmail.currentHistoryId())
    },
  )

  it('a message the database refuses is recorded with its parsed event, and the historyId moves past it', async () => {
    // A stand-in for a value Postgres refuses (class 22, data exception), for this subject only.
    const subject = `refused ${runId()}`
    await bed.db.sql.query(`
      CREATE OR REPLACE FUNCTION refuse_subject() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.subject = '${subject}' THEN
          RAISE EXCEPTION 'refused for the test' USING ERRCODE = '22023';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_subject BEFORE INSERT ON messages
        FOR EACH ROW EXECUTE FUNCTION refuse_subject();`)
    try {
      const gmail = await fakeGmail()
      const { poller } = bed.poller(gmail)
      await poller.pollOnce()
      const bad = gmail.deliver(rawEmail({ subject }))
      gmail.deliver(rawEmail({ subject: 'accepted' }))

      expect(await poller.pollOnce()).toMatchObject({
        status: 'completed',
        ingested: 1,
        failures: 1,
      })
      expect(await failuresOf(gmail)).toMatchObject([
        { source_ref: bad.id, has_event: true, error: /^rejected: invalid event/ },
      ])
      expect(await storedHistoryId(mailboxOf(gmail))).toBe(gmail.currentHistoryId())
      expect(await counterValue(poller.metrics.failed, { reason: 'rejected' })).toBe(1)
    } finally {
      await bed.db.sql.query('DROP TRIGGER IF EXISTS refuse_subject ON messages')
    }
  })

  it('a full sync records a bad message and stores the historyId too', async () => {
    const gmail = await fakeGmail()
    gmail.deliver(rawEmail({ subject: 'one' }))
    const bad = gmail.deliver(rawEmail({ subject: 'two' }))
    gmail.breakMessage(bad.id, { kind: 'no_raw' })
    const { poller } = bed.poller(gmail)

    expect(await poller.pollOnce()).toMatchObject({
      status: 'completed',
      mode: 'full_sync',
      ingested: 1,
      failures: 1,
    })
    expect(await failuresOf(gmail)).toMatchObject([{ source_ref: bad.id, error: /^no_raw/ }])
    expect(await storedHistoryId(mailboxOf(gmail))).toBe(gmail.currentHistoryId())
  })
})

describe('npm run failures -- replay (gmail)', () => {
  it('fetches the message again by id: still dead while Gmail refuses it, one row once it can', async () => {
    const gmail = await fakeGmail()
    const { poller } = bed.poller(gmail)
    await poller.pollOnce()
    const bad = gmail.deliver(rawEmail({ subject: 'replay me' }))
    gmail.breakMessage(bad.id, { kind: 'status', status: 404 })
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', failures: 1 })
    const [row] = await failuresOf(gmail)
    const env = { ...bed.originEnv(gmail), DOWNSTREAM_URL: '' }

    const listed = await runFailuresCli(bed.db, ['list', '--status', 'dead'], env)
    expect(listed.stdout).toMatch(new RegExp(`${row.id}\\s+dead\\s+inbound/gmail`))

    gmail.breakMessage(bad.id, { kind: 'status', status: 400 })
    const refused = await runFailuresCli(bed.db, ['replay', row.id], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`failure ${row.id}: still failing: client_error`)
    expect(await failuresOf(gmail)).toMatchObject([{ status: 'dead', error: /^client_error/ }])

    gmail.repairMessage(bad.id)
    const replayed = await runFailuresCli(bed.db, ['replay', row.id], env)
    expect(replayed).toMatchObject({ code: 0 })
    expect(replayed.stdout).toContain(
      `failure ${row.id}: gmail message ${bad.id} ingested (created`,
    )
    const [message] = await rowsOf(gmail)
    expect(await rowsOf(gmail)).toHaveLength(1)
    expect(message?.first_delivery_key).toBe(`gmail:${mailboxOf(gmail)}:${bad.id}`)
    expect(await failuresOf(gmail)).toMatchObject([{ status: 'resolved', message_id: message?.id }])

    const twice = await runFailuresCli(bed.db, ['replay', row.id], env)
    expect(twice.stdout).toContain('already resolved')
    // The poller neither fetches it again nor stores it twice.
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 0 })
    expect(await rowsOf(gmail)).toHaveLength(1)
    expect(messageGets(gmail, bad.id)).toHaveLength(3)
  })

  it('needs the GMAIL_* settings: without them, a configuration error (exit 2) and the row stays dead', async () => {
    const gmail = await fakeGmail()
    const { poller } = bed.poller(gmail)
    await poller.pollOnce()
    const bad = gmail.deliver(rawEmail())
    gmail.breakMessage(bad.id, { kind: 'no_raw' })
    await poller.pollOnce()
    const [row] = await failuresOf(gmail)

    const run = await runFailuresCli(bed.db, ['replay', row.id], { DOWNSTREAM_URL: '' })

    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/^configuration: .*GMAIL_CLIENT_ID/m)
    expect(await failuresOf(gmail)).toMatchObject([{ status: 'dead', error: /^no_raw/ }])
  })
})

/** Polls `check` every 50 ms until it holds (bounded: 20 s). */
async function waitFor(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 50))
  }
}
