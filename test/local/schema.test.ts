/**
 * migrations/schema.sql against a database migrated from scratch, and the rule that keeps it
 * readable: each function as it runs is one whole CREATE OR REPLACE in the newest migration that
 * touches it, never text patched into an older version.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  dumpSchema,
  normalizeDump,
  PgDumpMissingError,
  pgDumpVersion,
  SCHEMA_FILE,
} from '../../local/schema'
import { MIGRATIONS_DIR, migrationFiles } from '../../ops/migrate'
import { openSqlTestbed, type SqlTestbed } from '../support/sql-testbed'

let testbed: SqlTestbed
let fresh: string

beforeAll(async () => {
  testbed = await openSqlTestbed()
  fresh = await dumpSchema(testbed.database.url)
})
afterAll(async () => {
  await testbed?.close()
})

describe('migrations/schema.sql', () => {
  it('is what the migrations make', async () => {
    const committed = readFileSync(SCHEMA_FILE, 'utf8')
    const hint =
      'migrations/schema.sql is not what migrations/ makes: run `npm run schema` and commit it ' +
      `(below, - the committed file, + the fresh dump; pg_dump: ${await pgDumpVersion()})`
    expect(fresh, hint).toBe(committed)
  })

  it("holds every function's body as Postgres runs it", async () => {
    const functions = await ourFunctions(testbed)
    expect(functions.length).toBeGreaterThan(5)
    const missing = functions.filter((f) => !fresh.includes(f.body)).map((f) => f.name)
    expect(missing).toEqual([])
  })
})

describe('every function of the schema', () => {
  it('is one whole CREATE OR REPLACE in the newest migration that touches it', async () => {
    const ups = migrationFiles().map((file) => ({ file, up: upSection(file) }))
    const problems = (await ourFunctions(testbed)).flatMap(({ name, body }) => {
      const touches = new RegExp(`\\bFUNCTION\\s+(public\\.)?${name}\\s*\\(`, 'i')
      const newest = ups.findLast(({ up }) => touches.test(up))
      if (newest === undefined) return [`${name}: no migration creates it`]
      if (newest.up.includes(body)) return []
      return [`${name}: ${newest.file} does not hold its body whole (patched as text?)`]
    })
    expect(problems).toEqual([])
  })
})

describe('the dump, normalized', () => {
  const dump = (key: string, version: string) =>
    [
      '--',
      '-- PostgreSQL database dump',
      '--',
      '',
      `\\restrict ${key}`,
      '',
      `-- Dumped from database version ${version}`,
      `-- Dumped by pg_dump version ${version}`,
      '',
      'SET statement_timeout = 0;',
      "SELECT pg_catalog.set_config('search_path', '', false);",
      'SET transaction_timeout = 0;',
      '',
      '--',
      '-- Name: f(); Type: FUNCTION; Schema: public; Owner: -',
      '--',
      '',
      'CREATE FUNCTION public.f() RETURNS int LANGUAGE plpgsql AS $$',
      'BEGIN',
      '',
      '',
      '  RETURN 1;',
      'END',
      '$$;',
      '',
      '',
      '--',
      '-- PostgreSQL database dump complete',
      '--',
      '',
      `\\unrestrict ${key}`,
      '',
    ].join('\n')

  it("is the same whatever pg_dump's run key and release", () => {
    const a = normalizeDump(dump('AbC1', '15.20 (Debian 15.20-0+deb12u1)'), '1')
    expect(normalizeDump(dump('xYz9', '15.13'), '1')).toBe(a)
    expect(a).not.toMatch(/restrict|Dumped|SET |set_config|database dump/)
  })

  it("keeps each object's name line and a function's body as written", () => {
    const text = normalizeDump(dump('k', '15'), '20261203003005')
    expect(text).toContain('-- Newest migration: 20261203003005\n')
    expect(text).toContain('\n-- Name: f(); Type: FUNCTION; Schema: public; Owner: -\n\nCREATE')
    expect(text).toContain('BEGIN\n\n\n  RETURN 1;\nEND\n$$;\n')
  })
})

it('without pg_dump, fails saying so', async () => {
  const url = testbed.database.url
  await expect(dumpSchema(url, { pgDump: 'pg_dump-not-installed' })).rejects.toBeInstanceOf(
    PgDumpMissingError,
  )
})

interface OurFunction {
  name: string
  /** The text between the dollar quotes of its CREATE, as Postgres keeps it (prosrc). */
  body: string
}

/** The functions of public that migrations made (an extension's, pg_trgm's, are not). */
async function ourFunctions({ sql }: SqlTestbed): Promise<OurFunction[]> {
  const { rows } = await sql.query<OurFunction>(
    `SELECT p.proname AS name, p.prosrc AS body
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'public'
        AND NOT EXISTS (SELECT 1 FROM pg_depend d
                         WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                           AND d.deptype = 'e')
      ORDER BY 1`,
  )
  return rows
}

function upSection(file: string): string {
  return readFileSync(join(MIGRATIONS_DIR, file), 'utf8').split(/^-- migrate:down\b/m)[0] ?? ''
}
