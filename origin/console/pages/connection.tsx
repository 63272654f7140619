/**
 * One connection: what it is (channel, account, ids, settings, status, version, the version the
 * edge last verified with), its secrets by fingerprint and kid, and the changes an operator makes:
 * rotate a secret (a form per field: the new value and how long the old one keeps verifying),
 * disable or enable, delete (confirmed). Every form posts with the session's CSRF token.
 * @module
 */
import type { FC } from 'hono/jsx'
import {
  type ConnectionDetail,
  type ConnectionProblem,
  type ConnectionView,
  DEFAULT_OVERLAP_HOURS,
  kindOf,
  MAX_OVERLAP_HOURS,
  secretInput,
  settingInput,
} from '../connections'
import type { Session } from '../session'
import { at, EdgeSeen, ProblemLine, SecretInput, SecretList } from './connections'
import { Csrf, Layout } from './layout'

const Facts: FC<{ c: ConnectionView }> = ({ c }) => {
  const kind = kindOf(c.channel)
  return (
    <table id="connection">
      <tr>
        <th>id</th>
        <td class="mono">{c.id}</td>
      </tr>
      <tr>
        <th>channel</th>
        <td>{c.channel}</td>
      </tr>
      <tr>
        <th>account</th>
        <td class="mono">{c.account}</td>
      </tr>
      {kind.ids && (
        <tr>
          <th>{kind.ids.noun}</th>
          <td class="mono">{c.ids.length ? c.ids.join(', ') : '—'}</td>
        </tr>
      )}
      {Object.entries(c.settings).map(([name, value]) => (
        <tr>
          <th>{name}</th>
          <td class="mono">{value}</td>
        </tr>
      ))}
      <tr>
        <th>status</th>
        <td id="status" class={c.status === 'active' ? 'ok' : 'bad'}>
          {c.status}
        </td>
      </tr>
      <tr>
        <th>version</th>
        <td>{c.version}</td>
      </tr>
      <tr>
        <th>edge</th>
        <td>
          <EdgeSeen c={c} />
        </td>
      </tr>
      <tr>
        <th>secrets</th>
        <td id="secrets">
          <SecretList secrets={c.secrets} />
        </td>
      </tr>
      <tr>
        <th>created / updated</th>
        <td>{`${at(c.createdAt)} / ${at(c.updatedAt)}`}</td>
      </tr>
    </table>
  )
}

const RotateForm: FC<{ session: Session; c: ConnectionView; field: string }> = ({
  session,
  c,
  field,
}) => (
  <form
    method="post"
    action={`/console/connections/${c.id}/rotate`}
    class="card"
    autocomplete="off"
  >
    <Csrf session={session} />
    <input type="hidden" name="field" value={field} />
    <SecretInput name={secretInput(field)} label={`new ${field}`} />{' '}
    <label>
      old one verifies for{' '}
      <input
        type="number"
        name="overlap_hours"
        min={0}
        max={MAX_OVERLAP_HOURS}
        value={String(DEFAULT_OVERLAP_HOURS)}
        size={4}
      />{' '}
      hours
    </label>{' '}
    <button type="submit">{`Rotate ${field}`}</button>
  </form>
)

/** The ids and settings, replaced whole (a Slack app's new workspace, a WeChat AppID). */
const EditForm: FC<{ session: Session; c: ConnectionView }> = ({ session, c }) => {
  const kind = kindOf(c.channel)
  return (
    <form method="post" action={`/console/connections/${c.id}/update`} class="card">
      <Csrf session={session} />
      {kind.ids && (
        <p>
          <label>
            {kind.ids.noun}
            <br />
            <textarea name="ids" rows={4} cols={60}>
              {c.ids.join('\n')}
            </textarea>
          </label>{' '}
          <span class="muted">one a line</span>
        </p>
      )}
      {(kind.settings ?? []).map((name) => (
        <p>
          <label>
            {name} <input name={settingInput(name)} value={c.settings[name] ?? ''} />
          </label>
        </p>
      ))}
      <button type="submit">Save</button>
    </form>
  )
}

const Action: FC<{ session: Session; c: ConnectionView; action: string; label: string }> = ({
  session,
  c,
  action,
  label,
}) => (
  <form method="post" action={`/console/connections/${c.id}/${action}`} class="inline">
    <Csrf session={session} />
    <button type="submit">{label}</button>
  </form>
)

/** The registry's audit of this connection, newest first: who changed what (never a secret). */
const Audit: FC<{ c: ConnectionDetail }> = ({ c }) => (
  <table id="audit" class="dense">
    <tr>
      <th>at</th>
      <th>who</th>
      <th>what</th>
      <th>detail</th>
    </tr>
    {c.audit.map((a) => (
      <tr>
        <td>{at(a.at)}</td>
        <td>{a.actor}</td>
        <td>{a.action}</td>
        <td class="mono">{JSON.stringify(a.detail)}</td>
      </tr>
    ))}
  </table>
)

export const ConnectionPage: FC<{
  session: Session
  connection: ConnectionDetail
  flash?: string
  problem?: ConnectionProblem
}> = ({ session, connection: c, flash, problem }) => (
  <Layout title={`Connection ${c.id}`} session={session} current="connections" flash={flash}>
    <ProblemLine problem={problem} />
    <Facts c={c} />
    {(kindOf(c.channel).ids || kindOf(c.channel).settings) && <h2>Edit</h2>}
    {(kindOf(c.channel).ids || kindOf(c.channel).settings) && <EditForm session={session} c={c} />}
    {kindOf(c.channel).secretFields.length > 0 && <h2>Rotate</h2>}
    {kindOf(c.channel).secretFields.map((field) => (
      <RotateForm session={session} c={c} field={field} />
    ))}
    <h2>Status</h2>
    <p>
      {c.status === 'active' ? (
        <Action session={session} c={c} action="disable" label="Disable" />
      ) : (
        <Action session={session} c={c} action="enable" label="Enable" />
      )}{' '}
      <span class="muted">
        A disabled connection's events are refused by the origin at once, by the edge once it has
        the new version.
      </span>
    </p>
    <h2>Delete</h2>
    <form method="post" action={`/console/connections/${c.id}/delete`} class="card">
      <Csrf session={session} />
      <label>
        <input type="checkbox" name="confirm" value="yes" required /> delete this connection (its
        messages and conversations stay)
      </label>{' '}
      <button type="submit">Delete</button>
    </form>
    <h2>Changes</h2>
    <Audit c={c} />
    <p>
      <a href="/console/connections">All connections</a>
    </p>
  </Layout>
)
