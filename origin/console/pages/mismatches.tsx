/** Payload mismatches: keys a vendor resent with other content, with the hashes known. */
import type { FC } from 'hono/jsx'
import type { Mismatch } from '../mismatches'
import type { Session } from '../session'
import { Layout, when } from './layout'

export const MismatchesPage: FC<{ session: Session; rows: Mismatch[] }> = ({ session, rows }) => (
  <Layout title="Payload mismatches" session={session} current="mismatches">
    <p class="muted">
      The first content is kept; the resend is answered as a duplicate. Redis keeps a 56-bit prefix
      of the first hash; Redis-layer rows are the gateway's sample (at most 200 keyed decisions per
      isolate and flush).
    </p>
    {rows.length === 0 ? (
      <p class="muted">None.</p>
    ) : (
      <table>
        <tr>
          <th>seen</th>
          <th>layer</th>
          <th>channel</th>
          <th>delivery key</th>
          <th>message</th>
          <th>stored hash</th>
          <th>offered hash</th>
        </tr>
        {rows.map((r) => (
          <tr>
            <td>{when(r.seenAt)}</td>
            <td>{r.layer}</td>
            <td>{r.channel}</td>
            <td class="mono">
              <a href={`/console/lookup?q=${encodeURIComponent(r.deliveryKey)}`}>{r.deliveryKey}</a>
            </td>
            <td>{r.messageId ? `#${r.messageId}` : '—'}</td>
            <td class="mono">{r.storedHash ?? '—'}</td>
            <td class="mono">{r.offeredHash ?? '—'}</td>
          </tr>
        ))}
      </table>
    )}
  </Layout>
)
