/**
 * The operator's token, one row in both wings' settings tables: the Worker's `GET /healthz/deep`
 * takes it as a bearer token, the origin's console as a sign-in token (role operator).
 * @module
 */
import { setting } from './settings'

export const OPERATOR_TOKEN = setting({
  name: 'OPERATOR_TOKEN',
  kind: 'string',
  secret: true,
  doc: 'the operator token: GET /healthz/deep (Worker), console sign-in (origin); unset: neither',
})
