/**
 * The vendors' published known-answer vectors (vendor-protocols.md §1.1, §2.1), and
 * {@link SIGNATURE_VECTORS}, the same cases for the Node unit tests and again inside workerd.
 * @module
 */
import { sha256Hex } from '../../../shared/crypto'
import { slackSignature } from '../../../worker/channels/slack'
import { twilioSignature } from '../../../worker/channels/twilio'

export const SLACK_DOCS_VECTOR = {
  secret: '8f742231b10e8888abcd99yyyzzz85a5',
  timestamp: 1531420618,
  body:
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V' +
    '&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=' +
    '&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN' +
    '&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
  signature: 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
} as const

export const TWILIO_DOCS_TOKEN = '12345'

/** The voice-call parameters every Twilio vector signs (only the caller number differs). */
export function twilioCallParams(caller: string): Array<[string, string]> {
  return [
    ['Digits', '1234'],
    ['To', '+18005551212'],
    ['From', caller],
    ['Caller', caller],
    ['CallSid', 'CA1234567890ABCDE'],
  ]
}

/** [source, url, caller, signature] with token 12345. */
export const TWILIO_VECTORS: ReadonlyArray<readonly [string, string, string, string]> = [
  [
    'current docs page',
    'https://example.com/myapp.php?foo=1&bar=2',
    '+14158675310',
    'L/OH5YylLD5NRKLltdqwSvS0BnU=',
  ],
  [
    'twilio-python tests',
    'https://mycompany.com/myapp.php?foo=1&bar=2',
    '+14158675309',
    'RSOYDt4T1cUTdK1PDd93/VVr8B8=',
  ],
  [
    'older docs page',
    'https://mycompany.com/myapp.php?foo=1&bar=2',
    '+12349013030',
    '0/KCTR6DLpKmkAf8muzZqo1nDgQ=',
  ],
  [
    'variant seen in repos',
    'https://mycompany.com/myapp.php?foo=1&bar=2',
    '+14158675310',
    'GvWf1cFY/Q7PnoempGyD5oXAezc=',
  ],
]

/** twilio-python's JSON-body vector: the URL carries bodySHA256 and is signed alone. */
export const TWILIO_BODY_VECTOR = {
  body: '{"property": "value", "boolean": true}',
  bodySha256: '0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620',
  url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
  signature: 'a9nBmqA0ju/hNViExpshrM61xv4=',
} as const

export interface SignatureVector {
  name: string
  vendor: 'slack' | 'twilio'
  /** What our code makes of the vector's inputs. */
  compute(): Promise<string>
  /** What the vendor published. */
  expected: string
}

/**
 * Every published vector as a case (Node: test/channels/vendor-vectors.test.ts and the channels'
 * *-verify.test.ts; workerd: test/channels/vendor-vectors.workers.test.ts).
 */
export const SIGNATURE_VECTORS: readonly SignatureVector[] = [
  {
    name: 'Slack docs',
    vendor: 'slack',
    compute: () =>
      slackSignature(
        SLACK_DOCS_VECTOR.secret,
        String(SLACK_DOCS_VECTOR.timestamp),
        SLACK_DOCS_VECTOR.body,
      ),
    expected: SLACK_DOCS_VECTOR.signature,
  },
  ...TWILIO_VECTORS.map(
    ([source, url, caller, expected]): SignatureVector => ({
      name: `Twilio ${source}`,
      vendor: 'twilio',
      compute: () => twilioSignature(TWILIO_DOCS_TOKEN, url, twilioCallParams(caller)),
      expected,
    }),
  ),
  {
    name: 'Twilio bodySHA256 (the hash)',
    vendor: 'twilio',
    compute: () => sha256Hex(TWILIO_BODY_VECTOR.body),
    expected: TWILIO_BODY_VECTOR.bodySha256,
  },
  {
    // A JSON body: the URL, which carries the body's hash, is signed alone.
    name: 'Twilio bodySHA256 (the signature)',
    vendor: 'twilio',
    compute: async () =>
      twilioSignature(
        TWILIO_DOCS_TOKEN,
        `${TWILIO_BODY_VECTOR.url}&bodySHA256=${await sha256Hex(TWILIO_BODY_VECTOR.body)}`,
        [],
      ),
    expected: TWILIO_BODY_VECTOR.signature,
  },
]
