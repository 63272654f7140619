/**
 * Slack's fixtures: an Events API message callback, signed as Slack signs it, and a fresh delivery.
 * @module
 */
import { slackSignature } from '../../worker/channels/slack'
import {
  FORGED_SECRET,
  nowSeconds,
  randomBelow,
  randomId,
  type SignedDelivery,
  type Signing,
  TEST_SECRETS,
} from './common'

export const SLACK_TEAM = 'T123ABC456'
export const SLACK_APP = 'A123ABC456'
export const SLACK_CHANNEL = 'C123ABC456'

export interface SlackMessageFields {
  eventId?: string | null
  appId?: string
  team?: string
  channel?: string
  ts?: string
  user?: string
  text?: string
  /** An edit (`message_changed`) made at this ts, of the message at `ts`. */
  editedAt?: string
  /** A delete (`message_deleted`) made at this ts, of the message at `ts`. */
  deletedAt?: string
  /** The text before the edit or delete. @default `text` */
  previousText?: string
}

/** An Events API `event_callback` carrying a `message` event (an edit or a delete with those fields). */
export function slackMessageEvent(fields: SlackMessageFields = {}): Record<string, unknown> {
  const ts = fields.ts ?? '1355517523.000005'
  const channel = fields.channel ?? SLACK_CHANNEL
  const user = fields.user ?? 'U123ABC456'
  const text = fields.text ?? 'Live long and prospect.'
  const previous = { type: 'message', user, text: fields.previousText ?? text, ts }
  const at = fields.editedAt ?? fields.deletedAt
  const event =
    fields.editedAt !== undefined
      ? {
          type: 'message',
          subtype: 'message_changed',
          channel,
          ts: at,
          event_ts: at,
          message: { type: 'message', user, text, ts, edited: { user, ts: at } },
          previous_message: previous,
        }
      : fields.deletedAt !== undefined
        ? {
            type: 'message',
            subtype: 'message_deleted',
            channel,
            ts: at,
            event_ts: at,
            deleted_ts: ts,
            previous_message: previous,
          }
        : { type: 'message', channel, user, text, ts, event_ts: ts, channel_type: 'channel' }
  const body: Record<string, unknown> = {
    token: 'one-long-verification-token',
    team_id: fields.team ?? SLACK_TEAM,
    api_app_id: fields.appId ?? SLACK_APP,
    event,
    type: 'event_callback',
    event_time: 1355517523,
  }
  if (fields.eventId !== null) body.event_id = fields.eventId ?? 'Ev123ABC456'
  return body
}

export interface SlackRequestOptions {
  secret?: string
  timestamp?: number
  contentType?: string
  /** Replaces the computed signature. */
  signature?: string
  headers?: Record<string, string>
}

export async function slackRequest(
  url: string,
  payload: Record<string, unknown> | string,
  options: SlackRequestOptions = {},
): Promise<Request> {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload)
  const timestamp = String(options.timestamp ?? nowSeconds())
  const signature =
    options.signature ??
    (await slackSignature(options.secret ?? TEST_SECRETS.slack, timestamp, body))
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': options.contentType ?? 'application/json',
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': signature,
      ...options.headers,
    },
    body,
  })
}

/** A Slack message (or its edit or delete), with a fresh `event_id` and `ts` unless given. */
export function slackDelivery(fields: SlackMessageFields & Signing = {}): SignedDelivery {
  const eventId = fields.eventId ?? `Ev${randomId()}`
  const ts = fields.ts ?? `${nowSeconds()}.${String(randomBelow(1e6)).padStart(6, '0')}`
  const body = slackMessageEvent({ ...fields, eventId, ts })
  const secret = fields.forged ? FORGED_SECRET : (fields.secret ?? TEST_SECRETS.slack)
  return {
    channel: 'slack',
    messageKey: `${fields.team ?? SLACK_TEAM}:${fields.channel ?? SLACK_CHANNEL}:${ts}`,
    deliveryKey: `dedup:slack:${fields.appId ?? SLACK_APP}:${eventId}`,
    request: (base, attempt) =>
      slackRequest(`${base}/webhooks/slack`, body, {
        secret,
        ...(attempt && attempt.retry > 0
          ? {
              headers: {
                'x-slack-retry-num': String(attempt.retry),
                'x-slack-retry-reason': attempt.reason,
              },
            }
          : {}),
      }),
  }
}
