/**
 * Search by content: a phrase and a time range in, the newest matching messages out, each linked
 * to its lookup. The snippets are vendor text: rendered as text (escaped by Hono's JSX).
 * @module
 */
import type { FC } from 'hono/jsx'
import {
  MIN_SEARCH_CHARS,
  SEARCH_LIMIT,
  SEARCH_TIMEOUT_MS,
  type SearchQuery,
  type SearchResult,
} from '../search'
import type { Session } from '../session'
import { Layout, when } from './layout'

/** A datetime-local field's value (UTC, to the minute). */
const field = (d: Date) => d.toISOString().slice(0, 16)

const REFUSED: Record<Exclude<SearchResult, { ok: true }>['reason'], string> = {
  too_short: `Search for ${MIN_SEARCH_CHARS} characters or more.`,
  too_long: 'Search for a shorter phrase.',
  timed_out: `The search took longer than ${SEARCH_TIMEOUT_MS / 1000} s: narrow the time range or the phrase.`,
}

export const SearchPage: FC<{
  session: Session
  query: SearchQuery
  result: SearchResult | null
}> = ({ session, query, result }) => (
  <Layout title="Search by content" session={session} current="search">
    <form method="get" action="/console/search" class="card">
      <label>
        Text{' '}
        <input type="search" name="q" value={query.text} minlength={MIN_SEARCH_CHARS} required />
      </label>{' '}
      <label>
        from (UTC) <input type="datetime-local" name="since" value={field(query.since)} />
      </label>{' '}
      <label>
        to <input type="datetime-local" name="until" value={field(query.until)} />
      </label>{' '}
      <button type="submit">Search</button>
      <p class="muted">
        {`Anywhere in a message's current text, any case; stored in the range; the newest ${SEARCH_LIMIT}.`}
      </p>
    </form>
    {result && !result.ok && (
      <p class="bad" role="alert">
        {REFUSED[result.reason]}
      </p>
    )}
    {result?.ok && result.hits.length === 0 && <p>No message in this range holds that text.</p>}
    {result?.ok && result.hits.length > 0 && (
      <table class="search-results">
        <tr>
          <th>stored</th>
          <th>channel</th>
          <th>message</th>
          <th>sender</th>
          <th>text</th>
        </tr>
        {result.hits.map((hit) => (
          <tr data-message-id={hit.id}>
            <td>{when(hit.createdAt)}</td>
            <td>{hit.channel}</td>
            <td class="mono">
              <a href={`/console/lookup?q=${encodeURIComponent(`#${hit.id}`)}`}>{`#${hit.id}`}</a>
              <br />
              {hit.messageKey ?? ''}
              {hit.deleted && <span class="muted"> (deleted)</span>}
            </td>
            <td class="mono">{hit.sender}</td>
            <td>
              <div class="body">{hit.snippet}</div>
            </td>
          </tr>
        ))}
      </table>
    )}
    {result?.ok && result.more && (
      <p class="muted">{`More than ${SEARCH_LIMIT} match: narrow the range or the phrase to see the rest.`}</p>
    )}
  </Layout>
)
