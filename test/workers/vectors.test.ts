/** The vendors' official vectors again, inside workerd: Web Crypto there must agree with Node's. */
import { describe, expect, it } from 'vitest'
import { sha256Hex } from '../../contract/crypto'
import { slackSignature } from '../../worker/channels/slack'
import { twilioSignature } from '../../worker/channels/twilio'
import {
  SLACK_DOCS_VECTOR,
  TWILIO_BODY_VECTOR,
  TWILIO_DOCS_TOKEN,
  TWILIO_VECTORS,
  twilioCallParams,
} from '../unit/vendor-vectors'

describe('vendor vectors in workerd', () => {
  it('Slack docs vector', async () => {
    const { secret, timestamp, body, signature } = SLACK_DOCS_VECTOR
    expect(await slackSignature(secret, String(timestamp), body)).toBe(signature)
  })

  it.each(TWILIO_VECTORS)('Twilio vector (%s)', async (_source, url, caller, expected) => {
    expect(await twilioSignature(TWILIO_DOCS_TOKEN, url, twilioCallParams(caller))).toBe(expected)
  })

  it('Twilio bodySHA256 vector', async () => {
    const hash = await sha256Hex(TWILIO_BODY_VECTOR.body)
    expect(hash).toBe(TWILIO_BODY_VECTOR.bodySha256)
    const url = `${TWILIO_BODY_VECTOR.url}&bodySHA256=${hash}`
    expect(await twilioSignature(TWILIO_DOCS_TOKEN, url, [])).toBe(TWILIO_BODY_VECTOR.signature)
  })
})
