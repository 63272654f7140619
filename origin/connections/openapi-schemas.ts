/**
 * The schemas of the admin API's OpenAPI document (openapi.ts): the bodies it takes and the
 * views and problems it answers (views.ts, model.ts, problems.ts).
 * @module
 */
import { CONNECTION_CHANNELS, CONNECTION_LIMITS } from '../../contract/connection'
import { MAX_OVERLAP_SECONDS } from './model'
import { ADMIN_PROBLEMS, type AdminProblemCode, adminProblemType } from './problems'

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const strings = { type: 'array', items: { type: 'string' } }
const stringMap = { type: 'object', additionalProperties: { type: 'string' } }
const time = { type: 'string', format: 'date-time' }
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] })

const CONNECTION_REQUIRED = [
  ...['id', 'channel', 'account', 'ids', 'settings', 'status', 'version'],
  ...['createdAt', 'updatedAt', 'secrets', 'edge'],
]
const CONNECTION_PROPERTIES = {
  id: { type: 'string', pattern: '^c_[a-z2-7]{26}$' },
  channel: { enum: CONNECTION_CHANNELS },
  account: { type: 'string' },
  ids: strings,
  settings: stringMap,
  status: { enum: ['active', 'disabled'] },
  version: { type: 'integer', minimum: 1 },
  createdAt: time,
  updatedAt: time,
  secrets: { type: 'array', items: ref('Secret') },
  edge: ref('Edge'),
}
const AUDIT = {
  type: 'object',
  required: ['action', 'actor', 'at', 'detail'],
  properties: {
    action: { type: 'string' },
    actor: { type: 'string' },
    at: time,
    detail: { type: 'object' },
  },
}

export const ADMIN_SCHEMAS = {
  ConnectionInput: {
    type: 'object',
    additionalProperties: false,
    required: ['channel', 'account'],
    properties: {
      channel: { enum: CONNECTION_CHANNELS },
      account: {
        type: 'string',
        description: "The vendor's account id (docs/connections.md).",
      },
      ids: { ...strings, maxItems: CONNECTION_LIMITS.ids },
      settings: stringMap,
      status: { enum: ['active', 'disabled'] },
      secrets: {
        type: 'object',
        description: 'field -> the secret, or up to two (current first).',
        additionalProperties: {
          oneOf: [{ type: 'string' }, { ...strings, maxItems: CONNECTION_LIMITS.secretsPerField }],
        },
      },
    },
  },
  UpdateInput: {
    type: 'object',
    additionalProperties: false,
    properties: { ids: strings, settings: stringMap },
  },
  RotateInput: {
    type: 'object',
    additionalProperties: false,
    required: ['secrets'],
    properties: {
      secrets: stringMap,
      overlapSeconds: {
        type: 'integer',
        minimum: 0,
        maximum: MAX_OVERLAP_SECONDS,
        default: 86400,
      },
    },
  },
  Secret: {
    type: 'object',
    additionalProperties: false,
    required: ['field', 'kid', 'fingerprint', 'notAfter', 'createdAt', 'live'],
    properties: {
      field: { type: 'string' },
      kid: { type: 'string' },
      fingerprint: { type: 'string', pattern: '^sha256:[0-9a-f]{8}$' },
      notAfter: nullable(time),
      createdAt: time,
      live: { type: 'boolean' },
    },
  },
  Edge: {
    type: 'object',
    additionalProperties: false,
    required: ['publishedVersion', 'publishedAt', 'pending', 'seenVersion', 'seenAt'],
    properties: {
      publishedVersion: nullable({ type: 'integer' }),
      publishedAt: nullable(time),
      pending: { type: 'boolean' },
      seenVersion: nullable({ type: 'integer' }),
      seenAt: nullable(time),
    },
  },
  Connection: {
    type: 'object',
    additionalProperties: false,
    required: CONNECTION_REQUIRED,
    properties: CONNECTION_PROPERTIES,
  },
  ConnectionDetail: {
    type: 'object',
    additionalProperties: false,
    required: [...CONNECTION_REQUIRED, 'audit'],
    properties: { ...CONNECTION_PROPERTIES, audit: { type: 'array', items: AUDIT } },
  },
  ConnectionPage: {
    type: 'object',
    additionalProperties: false,
    required: ['connections', 'next'],
    properties: {
      connections: { type: 'array', items: ref('Connection') },
      next: nullable({ type: 'string' }),
    },
  },
  Problem: {
    type: 'object',
    description: 'RFC 9457 problem details; `field` names the input field refused.',
    required: ['type', 'title', 'status', 'code'],
    properties: {
      type: {
        enum: Object.keys(ADMIN_PROBLEMS).map((c) => adminProblemType(c as AdminProblemCode)),
      },
      title: { type: 'string' },
      status: { type: 'integer', minimum: 400, maximum: 599 },
      code: { enum: Object.keys(ADMIN_PROBLEMS) },
      detail: { type: 'string' },
      field: { type: 'string' },
    },
  },
} as const
