/**
 * One finding of the deployment check (`npm run doctor`), and the wording its fixes share: every
 * check module (deploy-checks.ts, deploy-spool.ts, deploy-trust.ts, deploy-reachability.ts) builds
 * its findings here, so that each says what is wrong and how to fix it the same way.
 * @module
 */

export type FindingLevel = 'error' | 'warn' | 'ok'

export interface Finding {
  level: FindingLevel
  /** What holds or is wrong; names variables, never their values (ORIGIN_URL aside: not secret). */
  what: string
  /** How to fix it; empty for `ok`. */
  fix: string
}

export const error = (what: string, fix: string): Finding => ({ level: 'error', what, fix })
export const warn = (what: string, fix: string): Finding => ({ level: 'warn', what, fix })
export const ok = (what: string): Finding => ({ level: 'ok', what, fix: '' })

/** Where an environment's plain variables go in wrangler.toml. */
export function varsSection(envName: string | undefined): string {
  return envName ? `[env.${envName}.vars]` : '[vars]'
}

/** `wrangler secret put NAME [--env E]`, as the fix for a missing secret. */
export function putSecret(name: string, envName: string | undefined): string {
  return `npx wrangler secret put ${name}${envName ? ` --env ${envName}` : ''} (or add it to the file for \`wrangler secret bulk\`)`
}
