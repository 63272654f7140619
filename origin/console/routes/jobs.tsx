/**
 * The console's bulk replay runs (`console_jobs`, started from routes/failures.tsx): a run's page
 * (`/jobs/{id}`) and its cancel (`POST /jobs/{id}/cancel`: operators only, audited; the run stops
 * before its next row). Behind the session gate.
 * @module
 */
import { Hono } from 'hono'
import { audit } from '../../audit'
import type { Database } from '../../db'
import { JobPage } from '../pages/failures'
import { cancelJob, getJob } from '../replays'
import { type ConsoleEnv, operatorOnly } from '../sign-in'

export function jobRoutes(db: Database): Hono<ConsoleEnv> {
  const routes = new Hono<ConsoleEnv>()

  routes.get('/jobs/:id{[0-9]{1,18}}', async (c) => {
    const job = await getJob(db, c.req.param('id'))
    if (!job) return c.notFound()
    return c.html(<JobPage session={c.get('session')} job={job} now={Date.now()} />)
  })

  routes.post('/jobs/:id{[0-9]{1,18}}/cancel', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const id = c.req.param('id')
    await cancelJob(db, id)
    await audit(db, {
      actor: c.get('session').tokenName,
      action: 'bulk_replay_cancel',
      target: `job ${id}`,
      result: 'requested',
    })
    return c.redirect(`/console/jobs/${id}`, 303)
  })

  return routes
}
