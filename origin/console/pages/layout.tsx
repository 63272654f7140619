/**
 * The console's shell: the document, the navigation, the signed-in operator and the sign-out
 * form (a POST with the session's CSRF token). Server-rendered; no script. Every value is text
 * to Hono's JSX, which escapes it: vendor content never becomes markup.
 * @module
 */
import type { Child, FC } from 'hono/jsx'
import { CSRF_FIELD, type Session } from '../session'

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1d232a;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center}
header a{color:#cfe3ff;text-decoration:none}header a.on{color:#fff;font-weight:600}
header .who{margin-left:auto;color:#aab}header form{display:inline}
main{padding:1rem 1.2rem;max-width:1200px}
h1{font-size:1.3rem;margin:.2rem 0 1rem}h2{font-size:1.05rem;margin:1.2rem 0 .5rem}
table{border-collapse:collapse;background:#fff;width:100%;margin-bottom:1rem}
th,td{border:1px solid #dde1e6;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.card{background:#fff;border:1px solid #dde1e6;padding:.8rem;margin-bottom:1rem}
.ok{color:#137333}.bad{color:#b3261e}.muted{color:#667}
code,.mono{font-family:ui-monospace,monospace;font-size:12.5px;word-break:break-all}
form.inline{display:inline}button{cursor:pointer}
.flash{padding:.5rem .8rem;border:1px solid #9ec5fe;background:#e7f1ff;margin-bottom:1rem}
.body,.edit-text{white-space:pre-wrap;background:#fbfbfc;border:1px solid #eee;padding:.4rem}
.wide{overflow-x:auto;margin-bottom:1rem}.wide table{margin-bottom:0}
table.dense th,table.dense td{padding:.25rem .35rem;font-size:13px}
`

export interface LayoutProps {
  title: string
  session: Session | null
  /** The nav entry to mark. */
  current?: 'overview' | 'lookup' | 'search' | 'failures' | 'mismatches' | 'connections'
  flash?: string
  children?: Child
}

const NAV = [
  ['overview', '/console', 'Overview'],
  ['lookup', '/console/lookup', 'Lookup'],
  ['search', '/console/search', 'Search'],
  ['failures', '/console/failures', 'Failures'],
  ['mismatches', '/console/mismatches', 'Payload mismatches'],
  ['connections', '/console/connections', 'Connections'],
] as const

/** Pages only operators may open (routes/connections.tsx): not offered to a viewer. */
const OPERATORS_ONLY: readonly string[] = ['connections']

export const Layout: FC<LayoutProps> = ({ title, session, current, flash, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{`${title} · inbound-dedup console`}</title>
      <style>{STYLE}</style>
    </head>
    <body>
      <header>
        <strong>inbound-dedup</strong>
        {session &&
          NAV.filter(([key]) => session.role === 'operator' || !OPERATORS_ONLY.includes(key)).map(
            ([key, href, label]) => (
              <a href={href} class={key === current ? 'on' : ''}>
                {label}
              </a>
            ),
          )}
        {session && (
          <span class="who">
            {session.tokenName} ({session.role}){' '}
            <form method="post" action="/console/logout">
              <input type="hidden" name={CSRF_FIELD} value={session.csrfToken} />
              <button type="submit">Sign out</button>
            </form>
          </span>
        )}
      </header>
      <main>
        <h1>{title}</h1>
        {flash && (
          <p class="flash" role="status">
            {flash}
          </p>
        )}
        {children}
      </main>
    </body>
  </html>
)

/** A hidden CSRF field for a state-changing form. */
export const Csrf: FC<{ session: Session }> = ({ session }) => (
  <input type="hidden" name={CSRF_FIELD} value={session.csrfToken} />
)

export const when = (d: Date | null | undefined) =>
  d
    ? d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z')
    : '—'
