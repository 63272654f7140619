/**
 * An edit that races its own message (found by the nemesis soak, seed ci-fixed-1: a Telegram
 * message and its edit sent 55 ms apart, no fault; the edit answered "duplicate" and the row kept
 * the original text). ingestEdit tries the UPDATE, finds no row, then looks the message up: if
 * the original commits between the two, the lookup finds it and the edit was taken for a replay.
 *
 * The window is made wide and certain with a test-only statement trigger: every UPDATE of
 * `messages` (the edit's, even when it matches no row) sleeps 600 ms after it ran, and the
 * original, which updates nothing, is sent meanwhile and commits.
 */
import { beforeAll, expect, it } from 'vitest'
import { fileTestbed } from '../support/for-file'
import { eventFixture } from '../support/origin'

const bed = fileTestbed()

beforeAll(async () => {
  await bed.sql.query(`
    CREATE FUNCTION test_slow_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(0.6); RETURN NULL; END $$;
    CREATE TRIGGER test_slow_update AFTER UPDATE ON messages
      FOR EACH STATEMENT EXECUTE FUNCTION test_slow_update();`)
})

it('an edit whose message commits while the edit runs is applied, not taken for a replay', async () => {
  const original = await eventFixture({
    channel: 'telegram',
    body: 'the original text',
    occurredAt: '2026-12-01T08:00:00.000Z',
  })
  const edit = await eventFixture({
    kind: 'edit',
    channel: 'telegram',
    messageKey: original.messageKey,
    body: 'the edited text',
    occurredAt: '2026-12-01T08:00:05.000Z',
  })
  const editing = bed.post(edit)
  // The edit's UPDATE (no row yet) is now sleeping in its trigger: the original lands meanwhile.
  await new Promise((resolve) => setTimeout(resolve, 200))
  expect((await bed.post(original)).status).toBe(201)
  const edited = await editing
  expect(edited.status).toBeLessThan(300)
  const { rows } = await bed.sql.query<{ body: string }>(
    'SELECT body FROM messages WHERE channel = $1 AND channel_message_id = $2',
    ['telegram', original.messageKey],
  )
  expect(rows.map((r) => r.body)).toEqual(['the edited text'])
  expect(edited.body.outcome).toBe('updated')
})
