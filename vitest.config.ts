import { defineConfig } from 'vitest/config'

/**
 * Node-side tests: unit tests of pure logic, integration tests of the origin against real Postgres
 * (through the Neon driver and the local proxy), and end-to-end tests through the whole local stack
 * (the Worker in workerd via Miniflare, origin processes, real Redis and Postgres).
 * Tests that run inside workerd itself live in test/workers/ (vitest.workers.config.ts).
 */
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/workers/**', 'node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores: more files at once only makes each slower and the timings noisier.
    maxWorkers: 2,
  },
})
