/**
 * origin/db/errors.ts: which driver failures are "the database is out of reach" (503, retried) for
 * both drivers. node-postgres passes Node's socket errors through with their `code`, and EPIPE has
 * the shape of a SQLSTATE; the SQLSTATEs with a letter in their class (3D000, 0A000) are still ones.
 */
import { describe, expect, it } from 'vitest'
import { sqlState, toDatabaseError } from '../../../origin/db/errors'
import { DatabaseUnavailableError, InvalidEventError } from '../../../origin/errors'

const failure = (code: string) => Object.assign(new Error('driver failure'), { code })

describe('driver failures', () => {
  it("Node's socket errors are no SQLSTATE: out of reach, 503", () => {
    for (const code of ['EPIPE', 'EPERM', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT']) {
      expect(sqlState(failure(code)), code).toBeUndefined()
      expect(toDatabaseError(failure(code)), code).toBeInstanceOf(DatabaseUnavailableError)
    }
  })

  it('SQLSTATEs keep their meaning, those with a letter in the class included', () => {
    expect(sqlState(failure('3D000'))).toBe('3D000')
    expect(toDatabaseError(failure('3D000'))).toBeInstanceOf(DatabaseUnavailableError)
    expect(toDatabaseError(failure('22P02'))).toBeInstanceOf(InvalidEventError)
    const unique = failure('23505')
    expect(toDatabaseError(unique)).toBe(unique)
    const unsupported = failure('0A000')
    expect(toDatabaseError(unsupported)).toBe(unsupported)
    for (const code of ['XX000', 'P0001', 'HV000', 'F0000', '42P01']) {
      expect(sqlState(failure(code)), code).toBe(code)
    }
  })
})
