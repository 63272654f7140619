/**
 * Failures: dead letters and downstream failures, filtered (a GET form), a page at a time; replay
 * one (a POST with the CSRF token, operators only); replay every dead row of the filter: an
 * estimate first, then a run whose page refreshes itself while it runs and can cancel it.
 * @module
 */
import type { FC } from 'hono/jsx'
import { type FailureFilter, type FailureRow, filterParams } from '../failures'
import { BULK_MAX, type Job, STALLED_AFTER_MS } from '../replays'
import type { Session } from '../session'
import { Csrf, Layout, when } from './layout'

const query = (pairs: [string, string][]) => new URLSearchParams(pairs).toString()

const HiddenFilter: FC<{ filter: FailureFilter }> = ({ filter }) => (
  <>
    {filterParams(filter, ['before']).map(([name, value]) => (
      <input type="hidden" name={name} value={value} />
    ))}
  </>
)

const Filters: FC<{ filter: FailureFilter }> = ({ filter }) => (
  <form method="get" action="/console/failures" class="card">
    <label>
      channel <input name="channel" size={10} value={filter.channel ?? ''} />
    </label>{' '}
    <label>
      stage{' '}
      <select name="stage">
        {['', 'inbound', 'downstream'].map((s) => (
          <option value={s} selected={filter.stage === s || (!filter.stage && !s)}>
            {s || 'any'}
          </option>
        ))}
      </select>
    </label>{' '}
    <label>
      status{' '}
      <select name="status">
        {['', 'dead', 'pending', 'resolved'].map((s) => (
          <option value={s} selected={filter.status === s || (!filter.status && !s)}>
            {s || 'any'}
          </option>
        ))}
      </select>
    </label>{' '}
    <label>
      from <input type="datetime-local" name="since" value={filter.since?.slice(0, 16) ?? ''} />
    </label>{' '}
    <label>
      to <input type="datetime-local" name="until" value={filter.until?.slice(0, 16) ?? ''} />
    </label>{' '}
    <button type="submit">Filter</button>
  </form>
)

export const FailuresPage: FC<{
  session: Session
  filter: FailureFilter
  rows: FailureRow[]
  next: string | null
  flash?: string
}> = ({ session, filter, rows, next, flash }) => {
  const operator = session.role === 'operator'
  return (
    <Layout title="Failures" session={session} current="failures" flash={flash}>
      <Filters filter={filter} />
      {operator && (
        <p>
          <a
            href={`/console/bulk-replays/new?${query(filterParams(filter, ['before', 'status']))}`}
          >
            Replay every dead row of this filter…
          </a>{' '}
          <span class="muted">(an estimate first)</span>
        </p>
      )}
      <table id="failures">
        <tr>
          <th>id</th>
          <th>channel</th>
          <th>stage</th>
          <th>status</th>
          <th>attempts</th>
          <th>delivery key</th>
          <th>error</th>
          <th>created</th>
          <th />
        </tr>
        {rows.map((f) => (
          <tr data-failure-id={f.id}>
            <td>{f.id}</td>
            <td>{f.channel}</td>
            <td>{`${f.stage}${f.source ? ` (${f.source})` : ''}`}</td>
            <td class={f.status === 'dead' ? 'bad' : f.status === 'resolved' ? 'ok' : ''}>
              {f.status}
            </td>
            <td class="n">{f.attempts}</td>
            <td class="mono">
              {f.deliveryKey ? (
                <a href={`/console/lookup?q=${encodeURIComponent(f.deliveryKey)}`}>
                  {f.deliveryKey}
                </a>
              ) : (
                '—'
              )}
            </td>
            <td class="mono">{f.error}</td>
            <td>{when(f.createdAt)}</td>
            <td>
              {operator && f.status === 'dead' && (
                <form method="post" action={`/console/failures/${f.id}/replay`} class="inline">
                  <Csrf session={session} />
                  <button type="submit">Replay</button>
                </form>
              )}
            </td>
          </tr>
        ))}
      </table>
      {rows.length === 0 && <p class="muted">No failures match.</p>}
      {next && (
        <a
          href={`/console/failures?${query([...filterParams(filter, ['before']), ['before', next]])}`}
        >
          Older →
        </a>
      )}
    </Layout>
  )
}

export const BulkEstimatePage: FC<{
  session: Session
  filter: FailureFilter
  matching: number
  willReplay: number
}> = ({ session, filter, matching, willReplay }) => (
  <Layout title="Bulk replay" session={session} current="failures">
    <div class="card">
      <p id="estimate">
        {`${matching} dead row${matching === 1 ? '' : 's'} match this filter; this run replays ${willReplay}`}
        {matching > BULK_MAX ? ` (at most ${BULK_MAX} per run; run again for the rest)` : ''}.
      </p>
      <p class="muted mono">
        {filterParams(filter, ['before', 'status'])
          .map(([k, v]) => `${k}=${v}`)
          .join(' ') || 'no filter: every dead row'}
      </p>
      <p class="muted">
        Each row goes through the same idempotent path as a live delivery: a replay twice is one
        row.
      </p>
      {willReplay > 0 && (
        <form method="post" action="/console/bulk-replays">
          <Csrf session={session} />
          <HiddenFilter filter={{ ...filter, status: undefined }} />
          <button type="submit">{`Replay ${willReplay} rows`}</button>
        </form>
      )}
      <p>
        <a href="/console/failures">Back</a>
      </p>
    </div>
  </Layout>
)

export const JobPage: FC<{ session: Session; job: Job; now: number }> = ({ session, job, now }) => {
  const running = job.status === 'running'
  const stalled = running && now - job.updatedAt.getTime() > STALLED_AFTER_MS
  const percent = job.total ? Math.round((job.done / job.total) * 100) : 100
  return (
    <Layout title={`Bulk replay #${job.id}`} session={session} current="failures">
      {running && !stalled && <meta http-equiv="refresh" content="2" />}
      <div class="card">
        <p id="job-status">
          {stalled ? 'stalled (the process running it stopped; start a new run)' : job.status}
          {job.cancelRequested && running ? ' (cancel requested)' : ''}
        </p>
        <progress max={job.total} value={job.done} aria-valuenow={percent}>
          {`${percent} %`}
        </progress>
        <p id="job-progress">
          {`${job.done} of ${job.total} replayed: ${job.resolved} resolved, ${job.failed} still failing`}
        </p>
        <p class="muted">{`started by ${job.actor} at ${when(job.createdAt)}; updated ${when(job.updatedAt)}`}</p>
        {running && !job.cancelRequested && session.role === 'operator' && (
          <form method="post" action={`/console/jobs/${job.id}/cancel`}>
            <Csrf session={session} />
            <button type="submit">Cancel</button>
          </form>
        )}
        <p>
          <a href={`/console/failures?${query(filterParams(job.filter, ['before']))}`}>
            The filtered list
          </a>
        </p>
      </div>
    </Layout>
  )
}
