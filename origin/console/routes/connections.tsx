/**
 * The console's connection pages: the list (`/connections`), the create form (`/connections/new`,
 * `POST /connections`), one connection (`/connections/{id}`) and its changes (`POST
 * /connections/{id}/rotate|disable|enable|delete`). Operators only, every page (a viewer gets
 * 403): the registry is the gateway's trust, not a reading page. Behind the session gate, so every
 * POST has passed its CSRF check before its form is read here. Changes go through the connections
 * service (audited under who signed in) and answer with a redirect whose URL holds only the
 * connection's id and a fixed word; a refusal re-renders the form with its secrets left out.
 * @module
 */
import { type Context, Hono } from 'hono'
import {
  type ConnectionProblem,
  type ConnectionView,
  type ConsoleConnections,
  channelOf,
  DONE_FLASH,
  draftOf,
  PAGE_SIZE,
  parseConnectionFilter,
  problemOf,
  redisplayOf,
  rotationOf,
} from '../connections'
import { ConnectionPage } from '../pages/connection'
import { ConnectionsPage, NewConnectionPage } from '../pages/connections'
import { Layout } from '../pages/layout'
import { type ConsoleEnv, operatorOnly } from '../sign-in'

const ID = ':id{c_[a-z2-7]{26}}'
type Handler = (c: Context<ConsoleEnv>, registry: ConsoleConnections) => Promise<Response>

/** Null: the registry is off (no ORIGIN_KEKS): every page says so. */
export function connectionRoutes(connections: ConsoleConnections | null): Hono<ConsoleEnv> {
  const routes = new Hono<ConsoleEnv>()
  // A guard in each route, not a `use`: a sub-app's middleware would run for routes mounted after it.
  const guarded = (handler: Handler) => async (c: Context<ConsoleEnv>) =>
    (await gate(c, connections)) ??
    (await handler(c, connections as ConsoleConnections).catch(refusal(c, connections, [])))

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
  for (const action of ['disable', 'enable'] as const) {
    routes.post(
      `/connections/${ID}/${action}`,
      guarded(async (c, registry) => {
        await registry[action](c.get('session').tokenName, idOf(c))
        return done(c, idOf(c), `${action}d`)
      }),
    )
  }
  routes.post(`/connections/${ID}/delete`, guarded(remove))
  return routes
}

async function listPage(c: Context<ConsoleEnv>, registry: ConsoleConnections) {
  const filter = parseConnectionFilter(c.req.query())
  const { connections, next } = await registry.list({ ...filter, limit: PAGE_SIZE })
  const flash = DONE_FLASH[c.req.query('done') ?? '']
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

async function showPage(c: Context<ConsoleEnv>, registry: ConsoleConnections) {
  const connection = await registry.show(idOf(c))
  if (!connection) return c.notFound()
  const flash = DONE_FLASH[c.req.query('done') ?? '']
  return c.html(<ConnectionPage session={c.get('session')} connection={connection} flash={flash} />)
}

async function create(c: Context<ConsoleEnv>, registry: ConsoleConnections) {
  const form = c.get('form')
  const session = c.get('session')
  const channel = channelOf(form.channel)
  if (!channel) {
    const problem = { code: 'connection_invalid', field: 'channel', message: 'pick a channel' }
    return c.html(<NewConnectionPage session={session} problem={problem} />, 400)
  }
  const draft = draftOf(channel, form)
  try {
    const created = await registry.create(session.tokenName, draft)
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

async function rotate(c: Context<ConsoleEnv>, registry: ConsoleConnections) {
  const connection = await registry.show(idOf(c))
  if (!connection) return c.notFound()
  const change = rotationOf(connection, c.get('form'))
  if ('code' in change) return refused(c, connection, change)
  try {
    await registry.rotate(c.get('session').tokenName, connection.id, change)
  } catch (err) {
    const problem = problemOf(err, Object.values(change.secrets))
    if (!problem) throw err
    return refused(c, connection, problem)
  }
  return done(c, connection.id, 'rotated')
}

async function remove(c: Context<ConsoleEnv>, registry: ConsoleConnections) {
  if (c.get('form').confirm !== 'yes') {
    const problem = { code: 'not_confirmed', field: 'confirm', message: 'tick the box to delete' }
    return refusedById(c, registry, problem)
  }
  await registry.remove(c.get('session').tokenName, idOf(c))
  return c.redirect('/console/connections?done=deleted', 303)
}

/** Operators only; and the registry on, or a page that says how to turn it on. */
async function gate(c: Context<ConsoleEnv>, connections: ConsoleConnections | null) {
  const refused = operatorOnly(c)
  if (refused || connections) return refused
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
 * A change the service refused (not found, a state it cannot take): the connection's page with
 * the reason. Any other error goes on to the origin's error handler. No secret is in `secrets`
 * here: the routes that take one catch their own refusals with it.
 */
function refusal(
  c: Context<ConsoleEnv>,
  connections: ConsoleConnections | null,
  secrets: readonly string[],
) {
  return async (err: unknown): Promise<Response> => {
    const problem = problemOf(err, secrets)
    if (!problem || !connections) throw err
    if (problem.code === 'connection_not_found') return c.notFound()
    return refusedById(c, connections, problem)
  }
}

/** The route's id (its pattern checked it); '' were it absent, which no connection has. */
const idOf = (c: Context<ConsoleEnv>) => c.req.param('id') ?? ''

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

async function refused(
  c: Context<ConsoleEnv>,
  connection: ConnectionView,
  problem: ConnectionProblem,
) {
  return c.html(
    <ConnectionPage session={c.get('session')} connection={connection} problem={problem} />,
    statusOf(problem),
  )
}

async function refusedById(
  c: Context<ConsoleEnv>,
  registry: ConsoleConnections,
  problem: ConnectionProblem,
) {
  const connection = await registry.show(idOf(c))
  if (!connection) return c.notFound()
  return refused(c, connection, problem)
}
