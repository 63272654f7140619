import { defineConfig } from 'vitest/config'

/**
 * Node-side tests: unit tests of pure logic, integration tests of the origin against real Postgres
 * (through the Neon driver and the local proxy), and end-to-end tests through the whole local stack
 * (the Worker in workerd via Miniflare, origin processes, real Redis and Postgres).
 * Tests that run inside workerd itself live in test/workers/ (vitest.workers.config.ts).
 *
 * The `integration-pg` project runs the origin's integration tests once more on node-postgres over
 * TCP (DATABASE_DRIVER=pg), with no WebSocket proxy on the path. origin-db-faults.test.ts stays
 * Neon-only: its faults are made by cutting the WebSocket proxy's connections.
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
          exclude: ['test/workers/**', 'test/**/*.workers.test.ts', 'node_modules/**'],
        },
      },
      {
        test: {
          ...shared,
          name: 'integration-pg',
          include: ['test/integration/**/*.test.ts', 'test/**/*.pg.test.ts'],
          exclude: ['test/origin/db/db-faults.test.ts', 'node_modules/**'],
          env: { TEST_DATABASE_DRIVER: 'pg' },
        },
      },
    ],
  },
})
