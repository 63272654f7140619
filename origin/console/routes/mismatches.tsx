/**
 * The console's payload mismatches (`/mismatches`): resends of a delivery key with other content,
 * with both hashes (recorded by the origin's `POST /v1/events`). Behind the session gate.
 * @module
 */
import { Hono } from 'hono'
import type { Database } from '../../db'
import { listMismatches } from '../mismatches'
import { MismatchesPage } from '../pages/mismatches'
import type { ConsoleEnv } from '../sign-in'

export function mismatchRoutes(db: Database): Hono<ConsoleEnv> {
  return new Hono<ConsoleEnv>().get('/mismatches', async (c) =>
    c.html(<MismatchesPage session={c.get('session')} rows={await listMismatches(db)} />),
  )
}
