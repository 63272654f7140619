/** The sign-in page: one token field, posted to /console/login; and a word on Cloudflare Access. */
import type { FC } from 'hono/jsx'
import { Layout } from './layout'

export const LoginPage: FC<{ error?: string; noTokens?: boolean; access?: boolean }> = ({
  error,
  noTokens,
  access,
}) => (
  <Layout title="Sign in" session={null}>
    {access && (
      <p>Opened through Cloudflare Access, the console signs you in with your Access identity.</p>
    )}
    {noTokens && !access && (
      <p class="bad">
        No console token is configured: set OPERATOR_TOKEN (or CONSOLE_TOKENS) for the origin.
      </p>
    )}
    {error && (
      <p class="bad" role="alert">
        {error}
      </p>
    )}
    <form method="post" action="/console/login" class="card">
      <label>
        Token <input type="password" name="token" autocomplete="current-password" required />
      </label>{' '}
      <button type="submit">Sign in</button>
    </form>
  </Layout>
)
