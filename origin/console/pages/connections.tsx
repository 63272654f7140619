/**
 * Connections: the list (a page at a time, by channel and account), and the create form, one
 * channel at a time (no script: the channel is picked first, then its fields are asked for).
 * Secret inputs are password fields that are never filled: the page has no value to put there.
 * @module
 */
import type { FC } from 'hono/jsx'
import { CONNECTION_CHANNELS, type ConnectionChannel } from '../../../contract/connection'
import {
  type ConnectionDraft,
  type ConnectionFilter,
  type ConnectionProblem,
  type ConnectionView,
  kindOf,
  type SecretView,
  secretInput,
  settingInput,
} from '../connections'
import type { Session } from '../session'
import { Csrf, Layout, when } from './layout'

const query = (filter: ConnectionFilter, after?: string) =>
  new URLSearchParams(
    Object.entries({ ...filter, after }).filter((e): e is [string, string] => !!e[1]),
  ).toString()

/** An RFC 3339 time as the console writes times. */
export const at = (iso: string | null) => when(iso ? new Date(iso) : null)

/**
 * Where the edge is: the version the publisher wrote to KV (or that a change waits to be), and
 * the version the edge last verified a request with (reported on its events), with when.
 */
export const EdgeSeen: FC<{ c: ConnectionView }> = ({ c }) => {
  const { publishedVersion, pending, seenVersion, seenAt } = c.edge
  const published = pending
    ? 'change not in KV yet'
    : publishedVersion === null
      ? 'not in KV'
      : `v${publishedVersion} in KV`
  return (
    <span data-edge>
      <span class={pending ? 'bad' : 'muted'}>{published}</span>
      {'; '}
      {seenVersion === null ? (
        <span class="muted" data-seen>
          not seen yet
        </span>
      ) : (
        <span class={seenVersion < c.version ? 'bad' : 'ok'} data-seen>
          {`seen v${seenVersion} at ${at(seenAt)}`}
        </span>
      )}
    </span>
  )
}

export const SecretList: FC<{ secrets: SecretView[] }> = ({ secrets }) =>
  secrets.length === 0 ? (
    <span class="muted">none</span>
  ) : (
    <div class="secrets">
      {secrets.map((s) => (
        <div class="mono" data-kid={s.kid}>
          {`${s.field} ${s.kid} ${s.fingerprint}`}
          {s.notAfter ? ` notAfter ${at(s.notAfter)}${s.live ? '' : ' (expired)'}` : ' (current)'}
        </div>
      ))}
    </div>
  )

const Filters: FC<{ filter: ConnectionFilter }> = ({ filter }) => (
  <form method="get" action="/console/connections" class="card">
    <label>
      channel{' '}
      <select name="channel">
        {['', ...CONNECTION_CHANNELS].map((ch) => (
          <option value={ch} selected={(filter.channel ?? '') === ch}>
            {ch || 'any'}
          </option>
        ))}
      </select>
    </label>{' '}
    <label>
      status{' '}
      <select name="status">
        {['', 'active', 'disabled'].map((st) => (
          <option value={st} selected={(filter.status ?? '') === st}>
            {st || 'any'}
          </option>
        ))}
      </select>
    </label>{' '}
    <label>
      account <input name="account" size={24} value={filter.account ?? ''} />
    </label>{' '}
    <button type="submit">Filter</button>
  </form>
)

export const ConnectionsPage: FC<{
  session: Session
  filter: ConnectionFilter
  rows: ConnectionView[]
  next: string | null
  flash?: string
}> = ({ session, filter, rows, next, flash }) => (
  <Layout title="Connections" session={session} current="connections" flash={flash}>
    <p>
      <a href="/console/connections/new">New connection…</a>
    </p>
    <Filters filter={filter} />
    <table id="connections" class="dense">
      <tr>
        <th>id</th>
        <th>channel</th>
        <th>account</th>
        <th>status</th>
        <th>version</th>
        <th>edge</th>
        <th>secrets</th>
      </tr>
      {rows.map((c) => (
        <tr data-connection-id={c.id}>
          <td class="mono">
            <a href={`/console/connections/${c.id}`}>{c.id}</a>
          </td>
          <td>{c.channel}</td>
          <td class="mono">{c.account}</td>
          <td class={c.status === 'active' ? 'ok' : 'bad'} data-status>
            {c.status}
          </td>
          <td class="n">{c.version}</td>
          <td>
            <EdgeSeen c={c} />
          </td>
          <td>
            <SecretList secrets={c.secrets} />
          </td>
        </tr>
      ))}
    </table>
    {rows.length === 0 && <p class="muted">No connections match.</p>}
    {next && <a href={`/console/connections?${query(filter, next)}`}>Next →</a>}
  </Layout>
)

/** The message, led by its field unless it already names it (the service's do: `account: …`). */
const named = ({ field, message }: ConnectionProblem) =>
  !field || message.startsWith(`${field}:`) ? message : `${field}: ${message}`

export const ProblemLine: FC<{ problem?: ConnectionProblem }> = ({ problem }) =>
  problem ? (
    <p class="bad" role="alert">
      {`${named(problem)} (${problem.code})`}
    </p>
  ) : null

/** A write-only input: a password field, never given a value, not remembered by the browser. */
export const SecretInput: FC<{ name: string; label: string }> = ({ name, label }) => (
  <label>
    {label}{' '}
    <input type="password" name={name} autocomplete="new-password" spellcheck={false} required />
  </label>
)

const ChannelPicker: FC = () => (
  <form method="get" action="/console/connections/new" class="card">
    <label>
      channel{' '}
      <select name="channel">
        {CONNECTION_CHANNELS.map((ch) => (
          <option value={ch}>{ch}</option>
        ))}
      </select>
    </label>{' '}
    <button type="submit">Next</button>
  </form>
)

const DraftForm: FC<{
  session: Session
  channel: ConnectionChannel
  shown?: Omit<ConnectionDraft, 'secrets'>
}> = ({ session, channel, shown }) => {
  const kind = kindOf(channel)
  return (
    <form method="post" action="/console/connections" class="card" autocomplete="off">
      <Csrf session={session} />
      <input type="hidden" name="channel" value={channel} />
      <p>
        <label>
          account <input name="account" size={40} value={shown?.account ?? ''} required />
        </label>{' '}
        <span class="muted">{kind.account.hint}</span>
      </p>
      {kind.ids && (
        <p>
          <label>
            {kind.ids.noun}
            <br />
            <textarea name="ids" rows={4} cols={60}>
              {(shown?.ids ?? []).join('\n')}
            </textarea>
          </label>{' '}
          <span class="muted">one a line</span>
        </p>
      )}
      {(kind.settings ?? []).map((name) => (
        <p>
          <label>
            {name} <input name={settingInput(name)} value={shown?.settings[name] ?? ''} />
          </label>
        </p>
      ))}
      {kind.secretFields.map((field) => (
        <p>
          <SecretInput name={secretInput(field)} label={field} />
        </p>
      ))}
      <button type="submit">Create</button>
    </form>
  )
}

export const NewConnectionPage: FC<{
  session: Session
  channel?: ConnectionChannel
  shown?: Omit<ConnectionDraft, 'secrets'>
  problem?: ConnectionProblem
}> = ({ session, channel, shown, problem }) => (
  <Layout
    title={channel ? `New ${channel} connection` : 'New connection'}
    session={session}
    current="connections"
  >
    <ProblemLine problem={problem} />
    {channel ? <DraftForm session={session} channel={channel} shown={shown} /> : <ChannelPicker />}
    <p class="muted">
      Secrets are sealed when stored and never shown again: the console shows a fingerprint.
    </p>
    <p>
      <a href="/console/connections">Back</a>
    </p>
  </Layout>
)
