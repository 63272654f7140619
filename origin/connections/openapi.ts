/**
 * The OpenAPI 3.1 document of the origin's admin API (`/v1/admin/connections`), served at
 * `GET /v1/admin/openapi.json`. Written by hand beside the code (views.ts, model.ts,
 * problems.ts); test/connections/admin-api.test.ts validates the real answers against it.
 * @module
 */
import { ADMIN_SCHEMAS } from './openapi-schemas'
import type { AdminProblemCode } from './problems'

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const json = (schema: object) => ({ 'application/json': { schema } })
const problem = (description: string, codes: AdminProblemCode[]) => ({
  description: `${description} Codes: ${codes.join(', ')}.`,
  content: { 'application/problem+json': { schema: ref('Problem') } },
})
const idParam = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^c_[a-z2-7]{26}$' },
}
const common = {
  '401': problem('Operator token missing or wrong.', ['unauthorized']),
  '429': problem('Too many refused tokens from this address.', ['too_many_requests']),
  '503': problem('ORIGIN_KEKS unset, or the database away.', ['registry_disabled', 'unavailable']),
}
const one = (description: string) => ({ description, content: json(ref('Connection')) })
const refused = problem('A field refused; `field` names it.', ['connection_invalid'])
const missing = problem('No such connection.', ['connection_not_found'])
const tooLarge = problem('Body over 256 KiB.', ['body_too_large'])
const conflict = problem('Account or id taken.', ['connection_exists', 'connection_id_taken'])
const body = (name: string) => ({ required: true, content: json(ref(name)) })
const action = (summary: string, operationId: string) => ({
  post: {
    operationId,
    summary,
    parameters: [idParam],
    responses: { '200': one('The connection, changed.'), '404': missing, ...common },
  },
})

export const ADMIN_OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'inbound-dedup admin API (channel connections)',
    version: '1.0.0',
    description:
      "The operator's registry of channel connections. Secrets are write-only: answers show a " +
      'fingerprint. Every change is audited and published to the edge. See docs/connections.md.',
  },
  servers: [{ url: '/' }],
  security: [{ operatorToken: [] }],
  paths: {
    '/v1/admin/connections': {
      get: {
        operationId: 'listConnections',
        summary: 'A page of connections, by id.',
        parameters: ['channel', 'status', 'account', 'after', 'limit'].map((name) => ({
          name,
          in: 'query',
          required: false,
          schema:
            name === 'limit' ? { type: 'integer', minimum: 1, maximum: 200 } : { type: 'string' },
        })),
        responses: {
          '200': { description: 'A page.', content: json(ref('ConnectionPage')) },
          '400': refused,
          ...common,
        },
      },
      post: {
        operationId: 'createConnection',
        summary: 'Create a connection.',
        requestBody: body('ConnectionInput'),
        responses: {
          '201': one('Created.'),
          '400': refused,
          '409': conflict,
          '413': tooLarge,
          ...common,
        },
      },
    },
    '/v1/admin/connections/resync': {
      post: {
        operationId: 'resyncConnections',
        summary: 'Queue every connection for the edge again.',
        responses: {
          '202': {
            description: 'Queued.',
            content: json({
              type: 'object',
              required: ['queued'],
              properties: { queued: { type: 'integer' } },
            }),
          },
          ...common,
        },
      },
    },
    '/v1/admin/connections/{id}': {
      get: {
        operationId: 'showConnection',
        summary: 'One connection and its audit trail.',
        parameters: [idParam],
        responses: {
          '200': { description: 'It.', content: json(ref('ConnectionDetail')) },
          '404': missing,
          ...common,
        },
      },
      patch: {
        operationId: 'updateConnection',
        summary: 'Replace its ids and / or settings.',
        parameters: [idParam],
        requestBody: body('UpdateInput'),
        responses: {
          '200': one('Changed.'),
          '400': refused,
          '404': missing,
          '409': conflict,
          '413': tooLarge,
          ...common,
        },
      },
      delete: {
        operationId: 'deleteConnection',
        summary: 'Delete it (its audit and its messages stay).',
        parameters: [idParam],
        responses: {
          '200': {
            description: 'Deleted.',
            content: json({
              type: 'object',
              required: ['id', 'deleted'],
              properties: { id: { type: 'string' }, deleted: { const: true } },
            }),
          },
          '404': missing,
          ...common,
        },
      },
    },
    '/v1/admin/connections/{id}/rotate': {
      post: {
        operationId: 'rotateConnection',
        summary: 'A new current secret; the old one verifies until now + overlapSeconds.',
        parameters: [idParam],
        requestBody: body('RotateInput'),
        responses: {
          '200': one('Rotated.'),
          '400': refused,
          '404': missing,
          '413': tooLarge,
          ...common,
        },
      },
    },
    '/v1/admin/connections/{id}/disable': action('Refuse its webhooks.', 'disableConnection'),
    '/v1/admin/connections/{id}/enable': action('Take its webhooks again.', 'enableConnection'),
  },
  components: {
    securitySchemes: {
      operatorToken: { type: 'http', scheme: 'bearer', description: 'OPERATOR_TOKEN' },
    },
    schemas: ADMIN_SCHEMAS,
  },
} as const
