import { defineConfig } from 'vitest/config'

/**
 * Node-side tests: every `test/**\/*.test.ts` but the `*.workers.test.ts`, which run inside workerd
 * (vitest.workers.config.ts). They are filed by subject (docs/design.md, "Tests"): pure logic,
 * the origin against real Postgres (through the Neon driver and the local proxy), and `*.e2e.test.ts`
 * through the whole local stack (the Worker in workerd via Miniflare, origin processes, real Redis
 * and Postgres).
 *
 * The `integration-pg` project runs the `*.pg.test.ts` (the origin's and the migrations' tests
 * against Postgres) once more on node-postgres over TCP (DATABASE_DRIVER=pg), with no WebSocket
 * proxy on the path. test/origin/db/db-faults.test.ts has no `.pg`: its faults are made by cutting
 * the WebSocket proxy's connections, so it stays Neon-only.
 */
const shared: { globalSetup: string[]; testTimeout: number; hookTimeout: number; pool: 'forks' } = {
  globalSetup: ['test/support/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
  pool: 'forks',
}

export default defineConfig({
  test: {
    // Two cores: more files at once only makes each slower and the timings noisier.
    maxWorkers: 2,
    projects: [
      {
        test: {
          ...shared,
          name: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.workers.test.ts', 'node_modules/**'],
        },
      },
      {
        test: {
          ...shared,
          name: 'integration-pg',
          include: ['test/**/*.pg.test.ts'],
          exclude: ['node_modules/**'],
          env: { TEST_DATABASE_DRIVER: 'pg' },
        },
      },
    ],
  },
})
