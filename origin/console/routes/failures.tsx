/**
 * The console's failures and their replays: the list (`/failures`, with the flash of this
 * operator's last replay), one replay (`POST /failures/{id}/replay`), and a bulk replay's estimate
 * (`/bulk-replays/new`) and start (`POST /bulk-replays`, a `console_jobs` row: routes/jobs.tsx).
 * Behind the session gate; replays need the operator role and are audited under who signed in.
 * @module
 */
import { type Context, Hono } from 'hono'
import type { Database } from '../../db'
import type { ReplayServiceDeps } from '../../failures/replay-service'
import type { Logger } from '../../log'
import { listFailurePage, parseFilter } from '../failures'
import { BulkEstimatePage, FailuresPage } from '../pages/failures'
import { auditedReplay, estimateBulkReplay, startBulkReplay } from '../replays'
import { type ConsoleEnv, operatorOnly } from '../sign-in'

export interface FailureRouteDeps {
  db: Database
  logger: Logger
  /** What a replay needs besides the database (DOWNSTREAM_URL, the retry policy, Gmail, GATEWAY_URL). */
  replay: Omit<ReplayServiceDeps, 'db'>
}

export function failureRoutes(deps: FailureRouteDeps): Hono<ConsoleEnv> {
  const { db, logger } = deps
  const replayDeps = { ...deps.replay, db }
  const routes = new Hono<ConsoleEnv>()

  routes.get('/failures', async (c) => {
    const filter = parseFilter(c.req.query())
    const { rows, next } = await listFailurePage(db, filter)
    const flash = await replayFlash(db, c)
    return c.html(
      <FailuresPage
        session={c.get('session')}
        filter={filter}
        rows={rows}
        next={next}
        flash={flash}
      />,
    )
  })

  routes.post('/failures/:id{[0-9]{1,18}}/replay', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const id = c.req.param('id')
    await auditedReplay(replayDeps, c.get('session').tokenName, id)
    return c.redirect(`/console/failures?replayed=${id}`, 303)
  })

  routes.get('/bulk-replays/new', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const filter = parseFilter(c.req.query())
    const estimate = await estimateBulkReplay(db, filter)
    return c.html(<BulkEstimatePage session={c.get('session')} filter={filter} {...estimate} />)
  })

  routes.post('/bulk-replays', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const filter = parseFilter(c.get('form'))
    const id = await startBulkReplay({ ...replayDeps, logger }, c.get('session').tokenName, {
      ...filter,
      status: undefined,
      before: undefined,
    })
    return c.redirect(`/console/jobs/${id}`, 303)
  })

  return routes
}

/** The result line of this operator's last replay of `?replayed=` (from the audit, not the URL). */
async function replayFlash(db: Database, c: Context<ConsoleEnv>): Promise<string | undefined> {
  const id = c.req.query('replayed')
  if (!id || !/^\d{1,18}$/.test(id)) return undefined
  const rows = await db.query<{ result: string }>(
    `SELECT result FROM console_audit
      WHERE actor = $1 AND action = 'replay' AND target = $2 ORDER BY id DESC LIMIT 1`,
    [c.get('session').tokenName, `failure ${id}`],
  )
  return rows[0] ? `Replay of failure ${id}: ${rows[0].result}` : undefined
}
