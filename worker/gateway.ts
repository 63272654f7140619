/**
 * Per-request wiring shared by the webhook routes: the channel's config (or a 503 naming what is
 * missing), the bounded body, the verified tenant, and the claim store.
 * @module
 */
import type { Context } from 'hono'
import { type ClaimStore, claimStore } from '../claims'
import type { EventConnection } from '../contract/connection'
import type { SignatureBinding } from '../contract/signature-binding'
import { BodyOverLimitError, readBoundedBody } from '../shared/body'
import {
  type ChannelConfig,
  type Classified,
  deliveriesOf,
  type PathParams,
  type RequestParts,
  type TenantVerdict,
} from './channels/types'
import { type Settings, settingsFor } from './config'
import type { Env } from './env'
import { BodyTooLargeError, ChannelNotConfiguredError, UnauthorizedError } from './errors'
import { perIsolate } from './per-isolate'
import { claimSignatureOnce } from './signature-once'

export type GatewayContext = Context<{ Bindings: Env }>

/** Steps every webhook route takes before its channel-specific parsing. */
export interface VerifiedRequest<T> {
  settings: Settings
  config: T
  /** The request as the verifier saw it, body bounded. */
  parts: RequestParts
  startedAt: number
  /** The tenant whose secrets matched; null for shared (single-tenant) secrets. */
  tenant: string | null
  /** Matched without naming a tenant (Slack's handshake): good for nothing that writes. */
  handshakeOnly: boolean
  /**
   * The key scopes the tenant may write, when they are not the tenant itself (a WhatsApp Cloud
   * app verifies, its phone numbers scope the keys); absent: the tenant is the scope.
   */
  scopes?: ReadonlySet<string>
  /**
   * The event tenants (row owners) the tenant may write for, when its config restricts them (a
   * Slack app, its workspaces); absent: the key scope check says it all.
   */
  writesFor?: ReadonlySet<string>
  /**
   * A one-time signature no store could bind yet (worker/signature-once.ts): every event of the
   * request carries it, for the origin to bind before it stores the event.
   */
  pendingBinding?: SignatureBinding
  /** The connection whose secrets verified it (worker/connections/); absent: the variables'. */
  connection?: EventConnection
}

/** The config a request is verified with: the channel's variables', or one connection's. */
export interface PickedConfig<T> {
  config: ChannelConfig<T>
  connection?: EventConnection
  /** Route parameters for the verifier in place of the path's (a connection's WeChat account). */
  params?: PathParams
}

/**
 * Picks the config; `body` reads the bounded body (once), for a picker that needs the id a body
 * names (worker/connections/pick.ts). A picker that does not call it keeps the config check
 * before the body is read.
 */
export type ConfigPicker<T> = (
  settings: Settings,
  body: () => Promise<RequestParts>,
) => PickedConfig<T> | Promise<PickedConfig<T>>

/**
 * Config check (503), bounded body (413), then the channel's verifier (401): in that order (a
 * picker that reads an index id from the body reads it first), and nothing is parsed until the
 * signature matched.
 */
export async function verifiedRequest<T>(
  c: GatewayContext,
  channel: string,
  pick: ConfigPicker<T>,
  verify: (parts: RequestParts, config: T, params?: PathParams) => Promise<TenantVerdict>,
  /** The channel's own bound, when its vendor documents larger bodies than MAX_BODY_BYTES. */
  channelMaxBodyBytes = 0,
): Promise<VerifiedRequest<T>> {
  const startedAt = Date.now()
  const settings = settingsFor(c.env)
  const limit = Math.max(settings.maxBodyBytes, channelMaxBodyBytes)
  let read: Promise<RequestParts> | undefined
  const body = () => {
    read ??= readBoundedBody(c.req.raw, limit).then(
      (bytes) => ({ url: c.req.url, headers: c.req.raw.headers, body: bytes }),
      (err: unknown) => {
        if (err instanceof BodyOverLimitError)
          throw new BodyTooLargeError(err.limitBytes, err.seenBytes)
        throw err
      },
    )
    return read
  }
  const picked = await pick(settings, body)
  const config = picked.config
  if (!config.ok) throw new ChannelNotConfiguredError(channel, config.missing)
  const parts = await body()
  const verdict = await verify(parts, config.value, picked.params)
  if (!verdict.ok) throw new UnauthorizedError(`${channel}: ${verdict.reason}`)
  const once = verdict.once
    ? await claimSignatureOnce(settings, claimStoreFor(settings), channel, verdict.once)
    : null
  return {
    settings,
    config: config.value,
    parts,
    startedAt,
    tenant: verdict.tenant,
    handshakeOnly: verdict.handshakeOnly === true,
    ...(verdict.scopes ? { scopes: verdict.scopes } : {}),
    ...(verdict.writesFor ? { writesFor: verdict.writesFor } : {}),
    ...(once?.kind === 'pending' ? { pendingBinding: once.binding } : {}),
    ...(picked.connection ? { connection: picked.connection } : {}),
  }
}

/**
 * A delivery may only be claimed or forwarded under the tenant whose secrets verified it. The
 * channels read the tenant the same way before and after verification, so its key scope holds by
 * construction; checked anyway, because a drift here would let one tenant write as another. The
 * rows' owner is checked here only: a Slack body names its workspace besides its app, and an
 * app's signature vouches only for the workspaces SLACK_TEAMS_BY_APP lists for it.
 */
export function assertVerifiedTenant(
  channel: string,
  request: Pick<VerifiedRequest<unknown>, 'tenant' | 'handshakeOnly' | 'scopes' | 'writesFor'>,
  classified: Classified,
): void {
  for (const delivery of deliveriesOf(classified)) {
    // Nothing is claimed or forwarded for these; the handshake names no tenant.
    if (delivery.action === 'ignore' || delivery.action === 'challenge') continue
    if (request.handshakeOnly) throw new UnauthorizedError(`${channel}: no tenant named`)
    // Kept under the verified tenant, with what it vouched for: checked when a replay places it.
    if (delivery.action === 'unrecognized') continue
    const scope = delivery.key.scope
    const allowed = request.scopes ? request.scopes.has(scope) : scope === request.tenant
    if (request.tenant !== null && !allowed) {
      // One item of a batch naming another tenant refuses the whole request: nothing is written.
      throw new UnauthorizedError(`${channel}: verified tenant differs from the delivery's`)
    }
    // The rows' owner, named by the body (a Slack team_id), must be one the tenant writes for.
    if (delivery.action === 'forward' && !(request.writesFor?.has(delivery.draft.tenant) ?? true)) {
      throw new UnauthorizedError(`${channel}: the delivery's tenant is not the verified tenant's`)
    }
  }
}

/**
 * One claim store per isolate and settings (the client holds no per-request I/O), with this
 * isolate's memo of settled keys when SETTLED_MEMO_ENTRIES turns it on.
 */
export const claimStoreFor: (settings: Settings) => ClaimStore | null = perIsolate((settings) =>
  claimStore(settings, settings.settledMemo),
)

/** `ctx.waitUntil` when the runtime gave us one (tests calling `app.request` may not). */
export function waitUntil(c: Pick<Context, 'executionCtx'>, promise: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(promise)
  } catch {
    void promise
  }
}
