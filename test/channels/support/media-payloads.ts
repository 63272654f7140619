/**
 * Media deliveries shaped like the vendors' documented examples (vendor-protocols-2 §2.3, §3.1,
 * §4): a Telegram photo, a Slack file_share, a Twilio MMS. Sign them with local/vendor-deliveries.ts's
 * helpers (telegramRequest, slackRequest, twilioRequest) like any other delivery.
 * @module
 */
import { slackMessageEvent, twilioParams } from '../../../local/vendor-deliveries'

export const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef'

/** A Telegram photo (three PhotoSizes, the largest in the middle), with or without caption. */
export function telegramPhotoUpdate(
  fields: { updateId?: number; chatId?: number; messageId?: number; caption?: string } = {},
): Record<string, unknown> {
  const chatId = fields.chatId ?? 1111111
  return {
    update_id: fields.updateId ?? 10000,
    message: {
      message_id: fields.messageId ?? 1365,
      from: { id: chatId, is_bot: false, first_name: 'Test', language_code: 'en' },
      chat: { id: chatId, first_name: 'Test', type: 'private' },
      date: 1441645532,
      ...(fields.caption === undefined ? {} : { caption: fields.caption }),
      photo: [
        { file_id: 'AgAD-small', file_unique_id: 'AQAD-s', file_size: 1418, width: 90, height: 67 },
        {
          file_id: 'AgAD-large',
          file_unique_id: 'AQAD-l',
          file_size: 99824,
          width: 1280,
          height: 960,
        },
        {
          file_id: 'AgAD-medium',
          file_unique_id: 'AQAD-m',
          file_size: 21345,
          width: 320,
          height: 240,
        },
      ],
    },
  }
}

/** What {@link telegramPhotoUpdate}'s photo becomes. */
export const TELEGRAM_PHOTO = {
  kind: 'image',
  mediaId: 'AgAD-large',
  size: 99824,
  content: { file_unique_id: 'AQAD-l', width: 1280, height: 960 },
} as const

/** A Slack file object as the file-object reference shows it. */
export const SLACK_FILE = {
  id: 'F0A12BCDE',
  created: 1712345678,
  timestamp: 1712345678,
  name: 'scan.pdf',
  title: 'scan',
  mimetype: 'application/pdf',
  filetype: 'pdf',
  pretty_type: 'PDF',
  user: 'U123ABC456',
  editable: false,
  size: 48213,
  mode: 'hosted',
  is_external: false,
  external_type: '',
  is_public: false,
  public_url_shared: false,
  display_as_bot: false,
  username: '',
  url_private: 'https://files.slack.com/files-pri/T123ABC456-F0A12BCDE/scan.pdf',
  url_private_download: 'https://files.slack.com/files-pri/T123ABC456-F0A12BCDE/download/scan.pdf',
  permalink: 'https://example.slack.com/files/U123ABC456/F0A12BCDE/scan.pdf',
}

/** What {@link SLACK_FILE} becomes. */
export const SLACK_FILE_ATTACHMENT = {
  kind: 'document',
  mediaId: 'F0A12BCDE',
  url: SLACK_FILE.url_private,
  mimeType: 'application/pdf',
  size: 48213,
  fileName: 'scan.pdf',
} as const

/** An event_callback with a `file_share` message (@slack/types FileShareMessageEvent). */
export function slackFileShare(
  files: unknown[],
  fields: { text?: string; eventId?: string; ts?: string } = {},
): Record<string, unknown> {
  const base = slackMessageEvent({
    text: fields.text ?? '',
    eventId: fields.eventId,
    ts: fields.ts,
  })
  const event = base.event as Record<string, unknown>
  return {
    ...base,
    event: { ...event, subtype: 'file_share', files, upload: true, display_as_bot: false },
  }
}

/** A Twilio media URL (`…/Messages/{MessageSid}/Media/{MediaSid}`). */
export function twilioMediaUrl(mediaSid: string): string {
  return `https://api.twilio.com/2010-04-01/Accounts/${ACCOUNT_SID}/Messages/MM0123456789abcdef0123456789abcdef/Media/${mediaSid}`
}

/** An inbound message's parameters with `NumMedia` media, each `[MediaContentType, MediaUrl]`. */
export function twilioMediaParams(
  media: ReadonlyArray<readonly [string, string]>,
  fields: { body?: string; messageSid?: string } = {},
): Array<[string, string]> {
  const params = twilioParams(fields).filter(([name]) => name !== 'NumMedia')
  params.push(['NumMedia', String(media.length)])
  for (const [n, [type, url]] of media.entries()) {
    params.push([`MediaContentType${n}`, type], [`MediaUrl${n}`, url])
  }
  return params
}
