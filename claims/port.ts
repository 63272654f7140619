/**
 * The few Redis operations the claim protocol needs: the seam between the protocol and a Redis
 * client (claims/platforms/ has one per client), as Powertools' persistence layer is.
 * Every call is bounded by the implementation; a timeout or network error throws, and the caller
 * decides to fail open.
 * @module
 */
/** One command as Redis reads it: its name, then its arguments. */
export type RedisCommand = readonly [string, ...(string | number)[]]
export type PipelineReply = { result: unknown } | { error: string }

export interface RedisPort {
  /** `SET key value NX PX ms GET`: null when this call set the key, else the value already there. */
  setNxGet(key: string, value: string, pxMs: number): Promise<string | null>
  /** `SET key value NX EX s GET`: the same, with a TTL in seconds (a record, not a lease). */
  setNxGetEx(key: string, value: string, exSeconds: number): Promise<string | null>
  /** Runs a Lua script (claims/lua-scripts.ts). */
  evalScript(script: string, keys: string[], args: string[]): Promise<unknown>
  hincrby(key: string, field: string, by: number): Promise<number>
  /**
   * Several commands in one round trip, not atomic: each answered on its own, in order, with its
   * reply or the error it met. Throws only when the round trip itself fails.
   */
  pipeline(commands: readonly RedisCommand[]): Promise<PipelineReply[]>
  ping(): Promise<void>
}
