/**
 * CORS for browser clients of the API. A preflight names no key, so it is answered for an Origin
 * that any tenant allows (API_ALLOWED_ORIGINS); the request itself must then come from an Origin
 * its own tenant allows ({@link originAllowedFor}), else 403 and nothing is written. Answers to an
 * allowed Origin expose the headers a client acts on: Idempotent-Replayed and Retry-After.
 * @module
 */
import type { MiddlewareHandler } from 'hono'
import { problemResponse } from '../../contract/problem'
import { IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER } from '../../idempotency-http/answers'
import type { Env } from '../env'
import { type ApiSettings, apiSettingsFor } from './settings'

/** How long a browser may keep a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600

const normal = (origin: string) => origin.toLowerCase().replace(/\/$/, '')

function allowedByAny(settings: ApiSettings, origin: string): boolean {
  const wanted = normal(origin)
  for (const origins of settings.allowedOrigins.values()) if (origins.has(wanted)) return true
  return false
}

/** No Origin (not a browser) passes; a browser's must be one of the tenant's. */
export function originAllowedFor(
  settings: ApiSettings,
  tenant: string,
  origin: string | undefined,
): boolean {
  return origin === undefined || (settings.allowedOrigins.get(tenant)?.has(normal(origin)) ?? false)
}

export function apiCors(): MiddlewareHandler<{ Bindings: Env }> {
  return async (c, next) => {
    const origin = c.req.header('origin')
    const allowed = origin !== undefined && allowedByAny(apiSettingsFor(c.env), origin)
    if (c.req.method === 'OPTIONS') {
      if (!allowed) return problemResponse('origin_not_allowed')
      return new Response(null, {
        status: 204,
        headers: {
          ...exposed(origin),
          'access-control-allow-methods': 'POST',
          'access-control-allow-headers': `Authorization, Content-Type, ${IDEMPOTENCY_KEY_HEADER}`,
          'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
        },
      })
    }
    await next()
    if (allowed) for (const [name, value] of Object.entries(exposed(origin))) c.header(name, value)
  }
}

function exposed(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': `${REPLAYED_HEADER}, Retry-After`,
    vary: 'Origin',
  }
}
