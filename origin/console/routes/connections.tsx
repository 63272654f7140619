/**
 * The console's connection pages: the list (`/connections`), the create form (`/connections/new`,
 * `POST /connections`), one connection (`/connections/{id}`) and its changes (`POST
 * /connections/{id}/update|rotate|disable|enable|delete`). Operators only, every page (a viewer gets
 * 403): the registry is the gateway's trust, not a reading page. Behind the session gate, so every
 * POST has passed its CSRF check before its form is read here. Every read and change is a call of
 * the connections service (origin/connections/service.ts; changes audited under who signed in),
 * answered with a redirect whose URL holds only the connection's id and a fixed word; a refusal
 * re-renders the form with its secrets left out.
 * @module
 */
import { type Context, Hono } from 'hono'
import * as registry from '../../connections/service'
import {
  type ConnectionProblem,
  channelOf,
  type DONE_FLASH,
  draftOf,
  flashOf,
  PAGE_SIZE,
  parseConnectionFilter,
  problemOf,
  redisplayOf,
  rotationOf,
  updateOf,
} from '../connections'
import { ConnectionPage } from '../pages/connection'
import { ConnectionsPage, NewConnectionPage } from '../pages/connections'
import { Layout } from '../pages/layout'
import { type ConsoleEnv, operatorOnly } from '../sign-in'

type Deps = registry.ConnectionServiceDeps
type Handler = (c: Context<ConsoleEnv>, deps: Deps) => Promise<Response>

const ID = ':id{c_[a-z2-7]{26}}'

/** `deps.originKeys` null: the registry is off (no ORIGIN_KEKS): every page says so. */
export function connectionRoutes(deps: Deps): Hono<ConsoleEnv> {
  const routes = new Hono<ConsoleEnv>()
  // A guard in each route, not a `use`: a sub-app's middleware would run for routes mounted after it.
  const guarded = (handler: Handler) => async (c: Context<ConsoleEnv>) =>
    (await gate(c, deps)) ?? (await handler(c, deps).catch(refusal(c, deps)))

  routes.get('/connections', guarded(listPage))
  routes.get(
    '/connections/new',
    guarded(async (c) =>
      c.html(
        <NewConnectionPage
          session={c.get('session')}
          channel={channelOf(c.req.query('channel'))}
        />,
      ),
    ),
  )
  routes.post('/connections', guarded(create))
  routes.get(`/connections/${ID}`, guarded(showPage))
  routes.post(`/connections/${ID}/rotate`, guarded(rotate))
  routes.post(
    `/connections/${ID}/disable`,
    guarded(async (c, deps) => {
      await registry.disableConnection(deps, idOf(c), actorOf(c))
      return done(c, idOf(c), 'disabled')
    }),
  )
  routes.post(
    `/connections/${ID}/enable`,
    guarded(async (c, deps) => {
      await registry.enableConnection(deps, idOf(c), actorOf(c))
      return done(c, idOf(c), 'enabled')
    }),
  )
  routes.post(
    `/connections/${ID}/update`,
    guarded(async (c, deps) => {
      const connection = await registry.showConnection(deps, idOf(c))
      const update = updateOf(connection, c.get('form'))
      await registry.updateConnection(deps, connection.id, update, actorOf(c))
      return done(c, connection.id, 'updated')
    }),
  )
  routes.post(`/connections/${ID}/delete`, guarded(remove))
  return routes
}

async function listPage(c: Context<ConsoleEnv>, deps: Deps) {
  const filter = parseConnectionFilter(c.req.query())
  const { connections, next } = await registry.listConnections(deps, {
    ...filter,
    limit: PAGE_SIZE,
  })
  const flash = flashOf(c.req.query('done'))
  const session = c.get('session')
  return c.html(
    <ConnectionsPage
      session={session}
      filter={filter}
      rows={connections}
      next={next}
      flash={flash}
    />,
  )
}

async function showPage(c: Context<ConsoleEnv>, deps: Deps) {
  const connection = await registry.showConnection(deps, idOf(c))
  const flash = flashOf(c.req.query('done'))
  return c.html(<ConnectionPage session={c.get('session')} connection={connection} flash={flash} />)
}

async function create(c: Context<ConsoleEnv>, deps: Deps) {
  const form = c.get('form')
  const session = c.get('session')
  const channel = channelOf(form.channel)
  if (!channel) {
    const problem = { code: 'connection_invalid', field: 'channel', message: 'pick a channel' }
    return c.html(<NewConnectionPage session={session} problem={problem} />, 400)
  }
  const draft = draftOf(channel, form)
  try {
    const created = await registry.createConnection(deps, draft, actorOf(c))
    return done(c, created.id, 'created')
  } catch (err) {
    const problem = problemOf(err, Object.values(draft.secrets))
    if (!problem) throw err
    const shown = redisplayOf(draft)
    return c.html(
      <NewConnectionPage session={session} channel={channel} shown={shown} problem={problem} />,
      statusOf(problem),
    )
  }
}

async function rotate(c: Context<ConsoleEnv>, deps: Deps) {
  const connection = await registry.showConnection(deps, idOf(c))
  const change = rotationOf(connection, c.get('form'))
  if ('code' in change) return refused(c, deps, change)
  try {
    await registry.rotateConnection(deps, connection.id, change, actorOf(c))
  } catch (err) {
    const problem = problemOf(err, Object.values(change.secrets))
    if (!problem) throw err
    return refused(c, deps, problem)
  }
  return done(c, connection.id, 'rotated')
}

async function remove(c: Context<ConsoleEnv>, deps: Deps) {
  if (c.get('form').confirm !== 'yes') {
    const problem = { code: 'not_confirmed', field: 'confirm', message: 'tick the box to delete' }
    return refused(c, deps, problem)
  }
  await registry.deleteConnection(deps, idOf(c), actorOf(c))
  return c.redirect('/console/connections?done=deleted', 303)
}

/** Operators only; and the registry on, or a page that says how to turn it on. */
async function gate(c: Context<ConsoleEnv>, deps: Deps) {
  const refused = operatorOnly(c)
  if (refused || deps.originKeys) return refused
  return c.html(
    <Layout title="Connections" session={c.get('session')} current="connections">
      <p class="bad" role="alert">
        The connection registry is off: set ORIGIN_KEKS (and EDGE_KEKS) for the origin.
      </p>
    </Layout>,
    503,
  )
}

/**
 * What the service refused outside a form that holds a secret (not found, a state it cannot
 * take): the connection's page with the reason, or 404. Any other error goes on to the origin's
 * error handler (logged, answered opaquely).
 */
function refusal(c: Context<ConsoleEnv>, deps: Deps) {
  return async (err: unknown): Promise<Response> => {
    const problem = problemOf(err, [])
    if (!problem) throw err
    return refused(c, deps, problem)
  }
}

/** The connection's page with `problem`, at its status; 404 when the connection is not there. */
async function refused(c: Context<ConsoleEnv>, deps: Deps, problem: ConnectionProblem) {
  if (problem.code === 'connection_not_found') return c.notFound()
  let connection: registry.ConnectionDetail
  try {
    connection = await registry.showConnection(deps, idOf(c))
  } catch (err) {
    if (problemOf(err, [])?.code === 'connection_not_found') return c.notFound()
    throw err
  }
  return c.html(
    <ConnectionPage session={c.get('session')} connection={connection} problem={problem} />,
    statusOf(problem),
  )
}

/** The route's id (its pattern checked it); '' were it absent, which no connection has. */
const idOf = (c: Context<ConsoleEnv>) => c.req.param('id') ?? ''

/** Who signed in, as the audit names them: a token's name, or the email Access vouched for. */
const actorOf = (c: Context<ConsoleEnv>) => c.get('session').tokenName

function done(c: Context<ConsoleEnv>, id: string, what: keyof typeof DONE_FLASH) {
  return c.redirect(`/console/connections/${id}?done=${what}`, 303)
}

const STATUS: Record<string, 404 | 409 | 503> = {
  connection_not_found: 404,
  connection_exists: 409,
  connection_id_taken: 409,
  registry_disabled: 503,
}
const statusOf = (problem: ConnectionProblem) => STATUS[problem.code] ?? 400
