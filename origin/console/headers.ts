/**
 * The console's response headers, on every answer it gives (its pages, redirects, refusals, its
 * 404s and errors): the security policy from `hono/secure-headers`, and `Cache-Control: no-store`
 * (its pages hold message text and a CSRF token; no cache keeps them).
 * @module
 */
import type { MiddlewareHandler } from 'hono'
import { secureHeaders } from 'hono/secure-headers'

/**
 * The pages run no script and load nothing from elsewhere: only their inline styles, images of
 * their own or data: URLs, forms posted to the console itself; never framed (X-Frame-Options
 * DENY says the same as frame-ancestors to browsers that predate it).
 */
const policy = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    styleSrc: ["'unsafe-inline'"],
    imgSrc: ["'self'", 'data:'],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
  // Not no-referrer (the default): then a browser sends `Origin: null` with the sign-in form,
  // which reads as cross-site. same-origin sends nothing to other sites.
  referrerPolicy: 'same-origin',
  xFrameOptions: 'DENY',
  // The origin does not terminate TLS and may share its host name: HSTS, with its subdomains,
  // is for whoever serves the host over HTTPS to decide, not for one path of it.
  strictTransportSecurity: false,
})

const noStore: MiddlewareHandler = async (c, next) => {
  await next()
  c.header('cache-control', 'no-store')
}

/** Mounted first, so that every answer below it, the session gate's too, carries them. */
export const consoleHeaders: MiddlewareHandler[] = [policy, noStore]
