/**
 * What a WhatsApp Cloud message says, by its type (vendor-protocols-2 §1.4): its text (a caption,
 * a button's or list reply's title), its media and structured content, an edit or a revoke of
 * another message; or that Meta documents it as carrying nothing to show (`ignore`); or null, a
 * shape this code does not know (whatsapp-cloud.ts keeps the message as unrecognized). And the
 * channel's list of what it answers "ok" for and keeps nothing of.
 * @module
 */
import type { Attachment, EventKind } from '../../contract/event'
import { jsonBytes, LIMITS } from '../../contract/event'
import { list, obj, str, vendorId } from './untrusted'

type Json = Record<string, unknown>

/** What a message says; `target`: the wamid an edit or a revoke is about. */
export type Content = { kind: EventKind; body: string; attachments: Attachment[]; target?: string }

const MEDIA = new Set(['image', 'video', 'audio', 'document', 'sticker'])
/**
 * The types Meta documents as no message. A message it sends no content of (`unsupported`,
 * `unknown`: a customer wrote something the Cloud API does not carry) is not among them: it is a
 * customer's message, kept as unrecognized (its sender and time are in the payload kept).
 */
const NOTHING_TO_SHOW = new Set(['reaction', 'system', 'request_welcome'])

/**
 * The change fields of a WhatsApp Business Account Meta documents as no customer message
 * (account, template, quality and capability notices; the business's own messages sent from the
 * app under Coexistence), by `ignore` reason; and the message types it documents as carrying
 * nothing to show. Anything else is kept as unrecognized (Coexistence's `history`, a new field).
 */
export const WHATSAPP_CLOUD_IGNORED: Readonly<Record<string, string>> = {
  wa_no_messages: 'a POST without messages or statuses',
  wa_errors: 'an error notice about the number, not a message',
  ...Object.fromEntries(
    [
      'account_alerts',
      'account_review_update',
      'account_update',
      'business_capability_update',
      'business_status_update',
      'campaign_status_update',
      'flows',
      'message_template_components_update',
      'message_template_quality_update',
      'message_template_status_update',
      'payment_configuration_update',
      'phone_number_name_update',
      'phone_number_quality_update',
      'security',
      'smb_app_state_sync',
      'template_category_update',
      'user_preferences',
    ].map((field) => [`wa_field_${field}`, `the account notice of field ${field}`]),
  ),
  wa_field_smb_message_echoes: "the business's own messages from the WhatsApp Business app",
  wa_type_reaction: 'a reaction to a message',
  wa_type_system: 'a system notice (a user changed their number)',
  wa_type_request_welcome: 'a user opened the chat for the first time (no message yet)',
}

export function whatsappContent(
  message: Json,
  nested = false,
): Content | { ignore: string } | null {
  const type = str(message.type) ?? 'none'
  const part = obj(message[type])
  const plain = (body: unknown, attachments: Attachment[] = []): Content => ({
    kind: 'message',
    body: typeof body === 'string' ? body : '',
    attachments,
  })
  if (type === 'text') return plain(part?.text ?? part?.body)
  if (type === 'button') return plain(part?.text)
  if (type === 'interactive') {
    const reply = obj(part?.button_reply) ?? obj(part?.list_reply) ?? obj(part?.nfm_reply)
    return plain(reply?.title ?? reply?.body)
  }
  if (MEDIA.has(type) && part) return plain(part.caption, [media(type, part)])
  if (type === 'location' && part) {
    const { latitude, longitude, name, address, url } = part
    return plain('', [{ kind: 'location', content: { latitude, longitude, name, address, url } }])
  }
  if (type === 'contacts') {
    return plain('', [{ kind: 'contacts', content: boundedContacts(list(message.contacts)) }])
  }
  const original = vendorId(part?.original_message_id)
  if (!nested && (type === 'edit' || type === 'revoke') && original !== null) {
    if (type === 'revoke') return { kind: 'delete', body: '', attachments: [], target: original }
    const edited = whatsappContent(obj(part?.message) ?? {}, true)
    return edited === null || 'ignore' in edited
      ? edited
      : { ...edited, kind: 'edit', target: original }
  }
  return !nested && NOTHING_TO_SHOW.has(type) ? { ignore: `wa_type_${type}` } : null
}

function media(type: string, part: Json): Attachment {
  const kind = type === 'audio' && part.voice === true ? 'voice' : (type as Attachment['kind'])
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined)
  const { id, url, mime_type, filename, caption } = part
  return {
    kind,
    ...{ mediaId: text(id), url: text(url), mimeType: text(mime_type) },
    ...{ fileName: text(filename), caption: text(caption) },
  }
}

/** Contact cards within the contract's 16 KiB: at most 20, whole, else names and phones only. */
function boundedContacts(contacts: unknown[]): Json {
  const whole = contacts.slice(0, 20)
  if (jsonBytes(whole) < LIMITS.content - 16) return { contacts: whole }
  const slim = (c: unknown) => ({ name: obj(obj(c)?.name)?.formatted_name, phones: obj(c)?.phones })
  return { contacts: whole.map(slim) }
}
