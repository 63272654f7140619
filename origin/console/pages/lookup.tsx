/**
 * Lookup: what one vendor id or key became. The message body and every vendor field are
 * attacker-controlled text: rendered as text (escaped by Hono's JSX), never as markup.
 * @module
 */
import type { FC } from 'hono/jsx'
import type { FoundClaim, FoundEdit, FoundMessage, LookupResult } from '../lookup'
import type { Session } from '../session'
import { Layout, when } from './layout'

/** One edit: when, its sequence, the text it set (vendor text: escaped), its delivery and hash. */
const Edit: FC<{ e: FoundEdit }> = ({ e }) => (
  <tr class={e.applied ? undefined : 'muted'}>
    <td>{when(e.editedAt)}</td>
    <td class="n">{e.editSeq ?? '—'}</td>
    <td>
      <div class="edit-text">{e.body}</div>
    </td>
    <td class="mono">
      {e.deliveryKey}
      <br />
      {e.payloadHash}
    </td>
    <td>{`${when(e.recordedAt)}${e.applied ? '' : ', after a newer edit: not applied'}`}</td>
  </tr>
)

/**
 * The message's edits, oldest first. A row edited before the history was kept (migration
 * 20261202008001) has its last edit only.
 */
const Edits: FC<{ m: FoundMessage }> = ({ m }) => {
  if (!m.editedAt && m.editCount === 0) return <>none</>
  const last = m.editedAt ? `last applied ${when(m.editedAt)} (sequence ${m.editSeq ?? '—'})` : ''
  const hidden = m.editCount - m.edits.length
  return (
    <>
      <div>{m.editCount === 0 ? `${last}; no history (edited before it was kept)` : last}</div>
      {hidden > 0 && <div class="muted">{`${hidden} earlier edits not shown`}</div>}
      {m.edits.length > 0 && (
        <table class="edits">
          <tr>
            <th>edited</th>
            <th>sequence</th>
            <th>text</th>
            <th>delivery, payload hash</th>
            <th>recorded</th>
          </tr>
          {m.edits.map((e) => (
            <Edit e={e} />
          ))}
        </table>
      )}
    </>
  )
}

/** `relay`: this origin's outbox relay runs (DOWNSTREAM_URL set); off, a pending row is no fault. */
const Message: FC<{ m: FoundMessage; relay: boolean }> = ({ m, relay }) => (
  <div class="card message" data-message-id={m.id}>
    <h2>{`Message #${m.id} (${m.channel})`}</h2>
    <table>
      <tr>
        <th>message key</th>
        <td class="mono">{m.messageKey ?? '—'}</td>
      </tr>
      <tr>
        <th>first delivery</th>
        <td class="mono">{m.deliveryKey}</td>
      </tr>
      <tr>
        <th>customer</th>
        <td>
          {`#${m.customer.id} `}
          <span class="mono">{`${m.customer.tenant} / ${m.customer.externalId}`}</span>
          {m.customer.displayName ? ` (${m.customer.displayName})` : ''}
        </td>
      </tr>
      <tr>
        <th>conversation</th>
        <td>{`#${m.conversation.id}, ${m.conversation.status}${m.conversation.subject ? `: ${m.conversation.subject}` : ''}`}</td>
      </tr>
      <tr>
        <th>sender</th>
        <td class="mono">{m.sender}</td>
      </tr>
      <tr>
        <th>occurred / stored</th>
        <td>{`${when(m.occurredAt)} / ${when(m.createdAt)}`}</td>
      </tr>
      <tr>
        <th>edits</th>
        <td>
          <Edits m={m} />
        </td>
      </tr>
      <tr>
        <th>delete</th>
        <td>{m.deletedAt ? `deleted ${when(m.deletedAt)}` : 'not deleted'}</td>
      </tr>
      <tr>
        <th>payload hash</th>
        <td class="mono">{m.payloadHash}</td>
      </tr>
      {m.subject && (
        <tr>
          <th>subject</th>
          <td>{m.subject}</td>
        </tr>
      )}
      <tr>
        <th>body</th>
        <td>
          <div class="body">{m.body}</div>
        </td>
      </tr>
      <tr>
        <th>attachments</th>
        <td class="mono">{m.attachments.length ? JSON.stringify(m.attachments) : 'none'}</td>
      </tr>
      <tr>
        <th>outbox</th>
        <td>
          {m.outbox.map((o) => (
            <div>
              {`#${o.id} ${o.topic}, created ${when(o.createdAt)}: `}
              {o.processedAt ? (
                <span class="ok">{`relayed ${when(o.processedAt)}`}</span>
              ) : relay ? (
                <span class="bad">not relayed</span>
              ) : (
                <span
                  class="muted"
                  title="DOWNSTREAM_URL is not set: outbox rows stay for another consumer"
                >
                  relay off
                </span>
              )}
            </div>
          ))}
        </td>
      </tr>
    </table>
  </div>
)

const claimText = (c: FoundClaim) => {
  if (c.kind === 'none') return 'no key (never claimed, released, or expired)'
  if (c.kind === 'unavailable') return c.error
  const ttl = c.ttlMs < 0 ? 'no TTL' : `${Math.round(c.ttlMs / 1000)} s left`
  return `${c.state}, hash ${c.hash ?? '—'}, ${ttl}`
}

export const LookupPage: FC<{
  session: Session
  result: LookupResult | null
  /** Whether this origin relays its outbox (DOWNSTREAM_URL). */
  relay: boolean
}> = ({ session, result, relay }) => (
  <Layout title="Lookup" session={session} current="lookup">
    <form method="get" action="/console/lookup" class="card">
      <label>
        Vendor id or key{' '}
        <input
          type="search"
          name="q"
          size={60}
          value={result?.query ?? ''}
          placeholder="Slack event_id or ts, MessageSid, Telegram update/message id, wamid, Message-ID, #row"
        />
      </label>{' '}
      <button type="submit">Look up</button>
    </form>
    {result &&
      result.messages.length === 0 &&
      result.failures.length === 0 &&
      result.decisions.length === 0 && <p class="muted">Nothing found for this id.</p>}
    {result?.messages.map((m) => (
      <Message m={m} relay={relay} />
    ))}
    {result && result.claims.length > 0 && (
      <>
        <h2>Redis claims</h2>
        <table>
          {result.claims.map((c) => (
            <tr>
              <td class="mono">{c.deliveryKey}</td>
              <td>{claimText(c)}</td>
            </tr>
          ))}
        </table>
      </>
    )}
    {result && result.decisions.length > 0 && (
      <>
        <h2>Gateway decisions for its deliveries</h2>
        <table id="gateway-decisions">
          <tr>
            <th>when</th>
            <th>delivery key</th>
            <th>decision</th>
            <th>decided by</th>
            <th>reason</th>
            <th>ms</th>
          </tr>
          {result.decisions.map((d) => (
            <tr>
              <td>{when(d.decidedAt)}</td>
              <td class="mono">{d.deliveryKey}</td>
              <td>{d.decision}</td>
              <td>{d.decidedBy}</td>
              <td>{d.reason}</td>
              <td class="n">{d.ms}</td>
            </tr>
          ))}
        </table>
      </>
    )}
    {result && result.failures.length > 0 && (
      <>
        <h2>Failures and dead letters</h2>
        <table>
          <tr>
            <th>id</th>
            <th>stage</th>
            <th>status</th>
            <th>attempts</th>
            <th>error</th>
            <th>updated</th>
          </tr>
          {result.failures.map((f) => (
            <tr>
              <td>
                <a href={`/console/failures?before=${Number(f.id) + 1}`}>{f.id}</a>
              </td>
              <td>{`${f.stage}${f.source ? ` (${f.source})` : ''}`}</td>
              <td>{f.status}</td>
              <td class="n">{f.attempts}</td>
              <td class="mono">{f.error}</td>
              <td>{when(f.updatedAt)}</td>
            </tr>
          ))}
        </table>
      </>
    )}
  </Layout>
)
