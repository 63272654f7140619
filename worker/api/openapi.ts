/**
 * The OpenAPI 3.1 document of the public API, served at GET /v1/openapi.json. Written by hand
 * beside the code it describes (the valibot schema in message.ts, the problems in
 * contract/problem.ts); test/api/api.e2e.test.ts validates every real answer of its tests against
 * it, so the two cannot drift unseen.
 * @module
 */
import { ATTACHMENT_KINDS, LIMITS } from '../../contract/event'
import { PROBLEMS, type ProblemCode, problemType } from '../../contract/problem'

const problemRef = { $ref: '#/components/schemas/Problem' }

const problemResponse = (description: string, codes: ProblemCode[], headers = {}) => ({
  description: `${description} Problem types: ${codes.map(problemType).join(', ')}.`,
  headers,
  content: { 'application/problem+json': { schema: problemRef } },
})

const retryAfter = {
  'Retry-After': {
    description: 'Seconds to wait before sending the same request again.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
}

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'inbound-dedup API',
    version: '1.0.0',
    description:
      'Post customer messages from your own clients. Every POST needs an Idempotency-Key ' +
      '(draft-ietf-httpapi-idempotency-key-header): one per user action, the same on every ' +
      'retry of it. See docs/api.md.',
  },
  servers: [{ url: '/' }],
  security: [{ apiKey: [] }],
  paths: {
    '/v1/messages': {
      post: {
        operationId: 'postMessage',
        summary: 'Post one customer message (one row per Idempotency-Key).',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: true,
            description:
              'A Structured Field string (`"8e03978e-40d5-43e8-bc93-6894a57f9324"`), or the same ' +
              'characters unquoted; 1 to 255 characters. Scoped to your tenant and this route.',
            schema: { type: 'string', minLength: 1, maxLength: 257 },
          },
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/MessageRequest' } },
          },
        },
        responses: {
          '201': {
            description:
              'The message is stored. A repeat of the request (same key, same body) gets this ' +
              'same answer with `Idempotent-Replayed: true`, and writes nothing.',
            headers: {
              'Idempotent-Replayed': {
                description:
                  'Present (`true`) when an earlier request with this key stored this answer.',
                schema: { type: 'string', enum: ['true'] },
              },
            },
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Created' } } },
          },
          '202': {
            description:
              'The message is queued (the platform cannot store it right now) and will be stored ' +
              'once. Not a stored answer: a retry with the same key gets 202 until the message is ' +
              'stored, then its 201.',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Queued' } } },
          },
          '400': problemResponse('Idempotency-Key missing or malformed, or the body is invalid.', [
            'idempotency_key_missing',
            'idempotency_key_malformed',
            'invalid_request',
          ]),
          '401': problemResponse('Missing or unknown API key.', ['unauthorized']),
          '403': problemResponse('The browser Origin is not allowed for this tenant.', [
            'origin_not_allowed',
          ]),
          '409': problemResponse(
            'A request with this Idempotency-Key is still running: retry after Retry-After.',
            ['idempotency_key_in_use'],
            retryAfter,
          ),
          '413': problemResponse('The body is larger than the gateway takes.', ['body_too_large']),
          '422': problemResponse('This Idempotency-Key was used with another request.', [
            'idempotency_key_reused',
          ]),
          '500': problemResponse('Internal error; retry with the same key.', ['internal_error']),
          '503': problemResponse(
            'The message could not be taken now; retry with the same key.',
            ['unavailable'],
            retryAfter,
          ),
        },
      },
    },
  },
  components: {
    securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } },
    schemas: {
      MessageRequest: {
        type: 'object',
        additionalProperties: false,
        required: ['customer'],
        anyOf: [
          { required: ['text'], properties: { text: { minLength: 1 } } },
          { required: ['attachments'], properties: { attachments: { minItems: 1 } } },
        ],
        properties: {
          customer: {
            type: 'object',
            additionalProperties: false,
            required: ['id'],
            properties: {
              id: { type: 'string', minLength: 1, maxLength: LIMITS.key },
              name: { type: 'string', maxLength: LIMITS.name },
              email: { type: 'string', format: 'email', maxLength: 320 },
            },
          },
          text: { type: 'string', maxLength: LIMITS.body },
          attachments: {
            type: 'array',
            maxItems: LIMITS.attachments,
            items: { $ref: '#/components/schemas/Attachment' },
          },
          sentAt: { type: 'string', format: 'date-time' },
        },
      },
      Attachment: {
        type: 'object',
        additionalProperties: false,
        required: ['kind'],
        properties: {
          kind: { type: 'string', enum: [...ATTACHMENT_KINDS] },
          mediaId: { type: 'string', maxLength: LIMITS.key },
          url: { type: 'string', maxLength: LIMITS.url },
          mimeType: { type: 'string', maxLength: LIMITS.name },
          size: { type: 'integer', minimum: 0 },
          fileName: { type: 'string', maxLength: LIMITS.subject },
          caption: { type: 'string', maxLength: LIMITS.body },
          content: { type: 'object' },
        },
      },
      Created: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'conversationId', 'customerId', 'status'],
        properties: {
          id: { type: 'string', description: 'The message row.' },
          conversationId: { type: 'string' },
          customerId: { type: 'string' },
          status: { const: 'created' },
        },
      },
      Queued: {
        type: 'object',
        additionalProperties: false,
        required: ['status'],
        properties: { status: { const: 'queued' } },
      },
      Problem: {
        type: 'object',
        description: 'RFC 9457 problem details.',
        required: ['type', 'title', 'status', 'code'],
        properties: {
          type: {
            type: 'string',
            enum: Object.keys(PROBLEMS).map((code) => problemType(code as ProblemCode)),
          },
          title: { type: 'string' },
          status: { type: 'integer', minimum: 400, maximum: 599 },
          detail: { type: 'string' },
          code: { type: 'string', enum: Object.keys(PROBLEMS) },
        },
      },
    },
  },
} as const
