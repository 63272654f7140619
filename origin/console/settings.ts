/**
 * The console's settings: who may sign in (OPERATOR_TOKEN, CONSOLE_TOKENS with names and roles)
 * and how long a session lasts. Problems name variables and entries by position, never a token.
 * @module
 */
import { OPERATOR_TOKEN, OPERATOR_TOKEN_MIN_CHARS } from '../../contract/operator-token'
import { present, readInt, setting } from '../../contract/settings'
import { ConfigError, type OriginEnv } from '../config'

export const CONSOLE_TOKENS = setting({
  name: 'CONSOLE_TOKENS',
  kind: 'secret-list',
  secret: true,
  doc: 'more console sign-in tokens, comma-separated name:role:token (role viewer or operator)',
})
export const CONSOLE_SESSION_HOURS = setting({
  name: 'CONSOLE_SESSION_HOURS',
  kind: 'int',
  secret: false,
  default: 8,
  min: 1,
  max: 168,
  doc: 'a console session ends this long after sign-in',
})

export const CONSOLE_SETTINGS = [OPERATOR_TOKEN, CONSOLE_TOKENS, CONSOLE_SESSION_HOURS] as const

export const ROLES = ['viewer', 'operator'] as const
export type Role = (typeof ROLES)[number]

/** A token that signs in: its name (for the audit) and role; the value stays in memory only. */
export interface ConsoleToken {
  name: string
  role: Role
  token: string
}

export interface ConsoleConfig {
  tokens: ConsoleToken[]
  sessionSeconds: number
}

const NAME = /^[A-Za-z0-9_.@-]{1,64}$/

/** The console's settings, or a ConfigError listing every bad entry. No token: nobody signs in. */
export function loadConsoleConfig(env: OriginEnv): ConsoleConfig {
  const problems: string[] = []
  const config = readConsoleConfig(env, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

function readConsoleConfig(env: OriginEnv, problems: string[]): ConsoleConfig {
  const tokens: ConsoleToken[] = []
  const operator = present(env, OPERATOR_TOKEN.name)
  if (operator) tokens.push({ name: 'operator', role: 'operator', token: operator })
  const entries = (present(env, CONSOLE_TOKENS.name) ?? '').split(',').filter((e) => e.trim())
  entries.forEach((entry, i) => {
    const [name = '', role = '', ...rest] = entry.trim().split(':')
    const token = rest.join(':')
    if (!NAME.test(name) || !(ROLES as readonly string[]).includes(role) || !token) {
      problems.push(
        `${CONSOLE_TOKENS.name} entry ${i + 1} must be name:role:token (role viewer or operator)`,
      )
    } else if (token.length < OPERATOR_TOKEN_MIN_CHARS) {
      problems.push(
        `${CONSOLE_TOKENS.name} entry ${i + 1}: the token needs ${OPERATOR_TOKEN_MIN_CHARS} characters or more`,
      )
    } else {
      tokens.push({ name, role: role as Role, token })
    }
  })
  const hours = readInt(env, CONSOLE_SESSION_HOURS, problems)
  return { tokens, sessionSeconds: hours * 3600 }
}
