/**
 * What the email tests add to the shared email fixtures (local/vendor-deliveries.ts: `rawEmail`,
 * `uniqueMessageId`, `CUSTOMER`): the sender part of email keys computed independently of
 * contract/email.ts, and the trace headers two relays add.
 * @module
 */
import { createHash } from 'node:crypto'
import { CUSTOMER } from '../../../local/vendor-deliveries'

/**
 * The sender part of email keys (`from-sha256-` + 32 hex of the lower-cased From address),
 * computed here independently of contract/email.ts, so the tests pin the format.
 */
export function senderKeyPart(address = CUSTOMER): string {
  return `from-sha256-${createHash('sha256').update(address.toLowerCase()).digest('hex').slice(0, 32)}`
}

/** Trace headers a different relay would add (Gmail's copy carries others than Cloudflare's). */
export const GMAIL_TRACE_HEADERS = [
  'Delivered-To: support@inbound.example',
  'Received: by 2002:a05:6a10:1234 with SMTP id abc123; Tue, 27 Aug 2024 08:49:50 -0700 (PDT)',
  'X-Google-Smtp-Source: AGHT+IEexample',
  'ARC-Seal: i=1; a=rsa-sha256; t=1724773790; cv=none; d=google.com; s=arc-20160816; b=abc',
]
export const CLOUDFLARE_TRACE_HEADERS = [
  'Received: from smtp.customer.example (127.0.0.1) by cloudflare-email.com (unknown) id 4fwwffRXOpyR for <support@inbound.example>; Tue, 27 Aug 2024 15:49:48 +0000',
]
