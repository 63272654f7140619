/**
 * Node side of the worker tests: starts support/servers.ts in a child process and hands the URLs
 * to the tests in workerd with `provide` / `inject`. The teardown closes the child's stdin, and
 * it closes its servers and deletes the run's Redis keys.
 * @module
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { TestProject } from 'vitest/node'
import type { TestServers } from './servers'

declare module 'vitest' {
  export interface ProvidedContext extends TestServers {}
}

export default async function setup(project: TestProject) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/workerd/servers.ts'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const servers = await new Promise<TestServers>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout })
    lines.once('line', (line) => resolve(JSON.parse(line) as TestServers))
    child.once('exit', (code) => reject(new Error(`test servers exited with ${code}`)))
  })
  for (const [key, value] of Object.entries(servers) as Array<[keyof TestServers, string]>) {
    project.provide(key, value)
  }
  return async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.stdin.end()
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))])
  }
}
