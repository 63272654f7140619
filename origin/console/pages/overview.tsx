/**
 * The overview: per channel, deliveries by decision and by the layer that decided, rejections by
 * reason, duplicate rate, the gateway's decision time, a chart; and the health of the origin,
 * Postgres, Redis and the spool queue.
 * @module
 */
import type { FC } from 'hono/jsx'
import type { Health } from '../health'
import { CATEGORIES, type Category, type ChannelOverview } from '../overview'
import type { Session } from '../session'
import { Chart } from './chart'
import { Layout } from './layout'

const LABELS: Record<Category, string> = {
  forwarded: 'new (forwarded)',
  duplicate_redis: 'duplicate at Redis',
  duplicate_postgres: 'duplicate at Postgres',
  payload_mismatch: 'payload mismatch',
  spooled: 'spooled',
  dead_lettered: 'dead-lettered',
  rejected: 'rejected',
  unrecognized: 'kept unrecognized',
  ignored: 'ignored',
  retry: 'asked to retry',
}

/**
 * Decided by, for each column: the layer that made the call, as the gateway's decisions record it
 * (the lookup shows the same per delivery). A new delivery is decided by its first Redis claim;
 * with Redis out of reach, by Postgres's insert (the cell says how many).
 */
const LAYER: Record<Category, string> = {
  forwarded: 'Redis (first claim)',
  duplicate_redis: 'Redis',
  duplicate_postgres: 'Postgres',
  payload_mismatch: 'Redis or Postgres',
  spooled: 'gateway',
  dead_lettered: 'spool queue',
  rejected: 'gateway',
  unrecognized: 'gateway (dead letter)',
  ignored: 'gateway',
  retry: 'gateway / Redis',
}

export const RANGES = { hour: 3600, day: 86_400 } as const

const ms = (bound: number | null | undefined) =>
  bound === undefined ? '—' : bound === null ? '> 1000 ms' : `≤ ${bound} ms`
const pct = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)} %`)

export const OverviewPage: FC<{
  session: Session
  channels: ChannelOverview[]
  health: Health
  since: Date
  until: Date
  range: string
}> = ({ session, channels, health, since, until, range }) => (
  <Layout title="Overview" session={session} current="overview">
    <form method="get" action="/console" class="card">
      Range:{' '}
      {Object.keys(RANGES).map((r) =>
        r === range ? (
          <strong>{`last ${r} `}</strong>
        ) : (
          <a href={`/console?range=${r}`}>{`last ${r} `}</a>
        ),
      )}
      · from <input type="datetime-local" name="since" value={since.toISOString().slice(0, 16)} />{' '}
      to <input type="datetime-local" name="until" value={until.toISOString().slice(0, 16)} />{' '}
      <button type="submit">Show</button>
      <span class="muted"> (UTC; gateway counts arrive within DECISION_FLUSH_SECONDS)</span>
    </form>
    <h2>Health</h2>
    <table>
      <tr>
        <th>origin</th>
        <th>Postgres</th>
        <th>Redis</th>
        <th>spooled (last hour)</th>
        <th title="spool events the consumer gave back to the queue after the origin failed them">
          retried (last hour)
        </th>
        <th title="dead letters of the last hour not replayed yet">
          dead-lettered, not replayed (last hour)
        </th>
        <th>spool counters (since Redis started)</th>
      </tr>
      <tr>
        <td class="ok">ok</td>
        <td class={health.postgres === 'ok' ? 'ok' : 'bad'}>{health.postgres}</td>
        <td class={health.redis === 'ok' ? 'ok' : 'bad'}>{health.redis}</td>
        <td class="n" data-health="spooled">
          {health.spooledLastHour}
        </td>
        <td class="n" data-health="retried">
          {health.retriedLastHour}
        </td>
        <td class="n" data-health="dead">
          {health.deadLastHour}
        </td>
        <td class="mono">
          {health.queue
            ? Object.entries(health.queue)
                .map(([k, v]) => `${k}=${v}`)
                .join(' ') || 'none'
            : '—'}
        </td>
      </tr>
    </table>
    <h2>Deliveries by decision and deciding layer</h2>
    {channels.length === 0 ? (
      <p class="muted">No deliveries in this range.</p>
    ) : (
      <div class="wide">
        <table id="decisions" class="dense">
          <tr>
            <th>channel</th>
            {CATEGORIES.map((c) => (
              <th title={`decided by ${LAYER[c]}`}>
                {LABELS[c]}
                <br />
                <span class="muted">{LAYER[c]}</span>
              </th>
            ))}
            <th>duplicate rate</th>
            <th>
              decision
              <br />
              p50 / p99
            </th>
          </tr>
          {channels.map((ch) => (
            <tr data-channel={ch.channel}>
              <th>{ch.channel}</th>
              {CATEGORIES.map((c) => (
                <td class="n" data-category={c}>
                  {ch.counts[c]}
                  {c === 'rejected' && ch.counts.rejected > 0 && (
                    <div class="muted">
                      {Object.entries(ch.rejected)
                        .map(([reason, n]) => `${reason}: ${n}`)
                        .join(', ')}
                    </div>
                  )}
                  {c === 'forwarded' && (ch.forwardedBy.postgres ?? 0) > 0 && (
                    <div class="muted" data-forwarded-by="postgres">
                      {`${ch.forwardedBy.postgres} by Postgres (Redis out)`}
                    </div>
                  )}
                </td>
              ))}
              <td class="n">{pct(ch.duplicateRate)}</td>
              <td class="n">
                {ms(ch.p50)}
                <br />
                {ms(ch.p99)}
              </td>
            </tr>
          ))}
        </table>
      </div>
    )}
    {channels.map((ch) => (
      <div class="card">
        <strong>{ch.channel}</strong>
        <br />
        <Chart points={ch.series} since={since} until={until} />
      </div>
    ))}
  </Layout>
)
