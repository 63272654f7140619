/**
 * Every Lua script of the claim protocol, in one place. Each runs as one EVAL (one round trip, no
 * NOSCRIPT fallback to spend a budget on), and each touches one key, so Redis applies it whole.
 * @module
 */

/** Compare-and-set: SET KEYS[1] ARGV[2] EX ARGV[3] if its value is ARGV[1] or it is gone. */
export const SET_IF_OURS_OR_GONE = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] or v == false then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0`

/**
 * Compare-and-set keeping the time left: SET KEYS[1] ARGV[2] if its value is ARGV[1], with the
 * TTL it had (PTTL then PX: KEEPTTL is not in every Redis the stand-in serves); if it is gone,
 * with EX ARGV[3].
 */
export const SET_IF_SAME_KEEPING_TTL = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', left)
  else
    redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  end
  return 1
end
if v == false then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0`

/** Compare-and-delete: DEL KEYS[1] only if its value is still ARGV[1]. */
export const DELETE_IF_OURS = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`

/** The whole stats hash (a plain command the port does not name). */
export const READ_HASH = `return redis.call('HGETALL', KEYS[1])`

/** A plain GET (a stored Idempotency-Key answer; the port names no GET of its own). */
export const READ_VALUE = `return redis.call('GET', KEYS[1])`

/** A key's value and its TTL in ms (the console's lookup); nil when the key is gone. */
export const READ_WITH_TTL = `local v = redis.call('GET', KEYS[1])
if v == false then return false end
return {v, redis.call('PTTL', KEYS[1])}`
