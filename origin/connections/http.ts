/**
 * The registry's admin API, `/v1/admin/connections` (openapi.ts documents it): the operator's
 * create, list, show, update, rotate, disable, enable, delete and resync, each a call of the
 * service (service.ts) that the console and the CLI make too. Behind OPERATOR_TOKEN (refusals
 * limited per client address with every other operator credential; without a token the routes do
 * not exist, 404), then ORIGIN_KEKS (unset: 503 `registry_disabled`). Bodies are bounded before
 * they are parsed; every refusal is a problem (problems.ts) naming the field; no answer ever holds
 * a secret (views show fingerprints).
 * @module
 */
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { BodyOverLimitError, readBoundedBody } from '../../shared/body'
import { DatabaseUnavailableError } from '../errors'
import { limitedOperatorAccess, type SignInLimit } from '../sign-in-limit'
import type { ConnectionServiceDeps } from './deps'
import { ConnectionError, REGISTRY_DISABLED_MESSAGE } from './errors'
import { ADMIN_OPENAPI_DOCUMENT } from './openapi'
import { adminProblem, errorProblem } from './problems'
import { resyncAll } from './resync'
import * as registry from './service'

export interface ConnectionRoutesDeps extends ConnectionServiceDeps {
  operatorToken: string | undefined
  signInLimit: SignInLimit
}

/** Who a change over HTTP is, in the audit trail: OPERATOR_TOKEN has no other name. */
const ACTOR = 'operator (HTTP API)'
/** A connection as JSON: 1,000 ids and two secrets per field fit many times over. */
export const MAX_ADMIN_BODY_BYTES = 256 * 1024

export function connectionRoutes(deps: ConnectionRoutesDeps): Hono {
  const routes = new Hono()
  routes.use(operatorOnly(deps))
  const answer = (work: (c: Context) => Promise<Response>) => (c: Context) =>
    work(c).catch(problemOf)

  routes.get(
    '/',
    answer(async (c) => {
      const q = c.req.query()
      const limit = q.limit === undefined ? undefined : Number(q.limit)
      const page = await registry.listConnections(deps, { ...q, limit })
      return c.json(page, 200)
    }),
  )
  routes.post(
    '/',
    answer(async (c) => c.json(await registry.createConnection(deps, await body(c), ACTOR), 201)),
  )
  routes.post(
    '/resync',
    answer(async (c) => c.json({ queued: await resyncAll(deps, ACTOR) }, 202)),
  )
  routes.get(
    '/:id',
    answer(async (c) => c.json(await registry.showConnection(deps, idOf(c)), 200)),
  )
  routes.patch(
    '/:id',
    answer(async (c) =>
      c.json(await registry.updateConnection(deps, idOf(c), await body(c), ACTOR), 200),
    ),
  )
  routes.post(
    '/:id/rotate',
    answer(async (c) =>
      c.json(await registry.rotateConnection(deps, idOf(c), await body(c), ACTOR), 200),
    ),
  )
  routes.post(
    '/:id/disable',
    answer(async (c) => c.json(await registry.disableConnection(deps, idOf(c), ACTOR), 200)),
  )
  routes.post(
    '/:id/enable',
    answer(async (c) => c.json(await registry.enableConnection(deps, idOf(c), ACTOR), 200)),
  )
  routes.delete(
    '/:id',
    answer(async (c) => c.json(await registry.deleteConnection(deps, idOf(c), ACTOR), 200)),
  )
  routes.notFound(() => adminProblem('not_found'))
  return routes
}

/** `GET /v1/admin/openapi.json`: the admin API's document (no secret in it; open to read). */
export function adminOpenApiRoutes(): Hono {
  return new Hono().get('/openapi.json', (c) => c.json(ADMIN_OPENAPI_DOCUMENT))
}

const idOf = (c: Context): string => c.req.param('id') ?? ''

function operatorOnly(deps: ConnectionRoutesDeps): MiddlewareHandler {
  return async (c, next) => {
    const access = limitedOperatorAccess(c, deps.operatorToken, deps.signInLimit)
    if (!access.ok && access.status === 429) {
      return adminProblem('too_many_requests', {}, { 'retry-after': String(access.retryAfter) })
    }
    if (!access.ok) return adminProblem(access.status === 404 ? 'not_found' : 'unauthorized')
    if (!deps.originKeys)
      return adminProblem('registry_disabled', { detail: REGISTRY_DISABLED_MESSAGE })
    await next()
  }
}

class BodyProblem extends Error {
  constructor(readonly response: Response) {
    super('refused body')
  }
}

/** The JSON body, at most {@link MAX_ADMIN_BODY_BYTES}; anything else is refused before parsing. */
async function body(c: Context): Promise<unknown> {
  const type = c.req.header('content-type') ?? ''
  if (!/^application\/json\b/i.test(type)) {
    throw new BodyProblem(
      adminProblem('connection_invalid', { detail: 'send application/json', field: '(body)' }),
    )
  }
  try {
    const { text } = await readBoundedBody(c.req.raw, MAX_ADMIN_BODY_BYTES)
    return JSON.parse(text)
  } catch (err) {
    if (err instanceof BodyOverLimitError) {
      const detail = `at most ${MAX_ADMIN_BODY_BYTES} bytes`
      throw new BodyProblem(adminProblem('body_too_large', { detail, field: '(body)' }))
    }
    if (err instanceof SyntaxError) {
      throw new BodyProblem(
        adminProblem('connection_invalid', { detail: 'not JSON', field: '(body)' }),
      )
    }
    throw err
  }
}

/** A known refusal as its problem; anything else goes on to the app's one error handler. */
function problemOf(err: unknown): Response {
  if (err instanceof BodyProblem) return err.response
  if (err instanceof ConnectionError) return errorProblem(err)
  if (err instanceof DatabaseUnavailableError) {
    return adminProblem('unavailable', { detail: 'database unavailable' }, { 'retry-after': '5' })
  }
  throw err
}
