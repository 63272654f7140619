/**
 * `send-webhook` without a stack: its email mode checks a message for what wrangler's local email
 * endpoint needs and says what is missing before anything is sent (that endpoint answers a
 * message without them with a TypeError of its own); the README's sample is such a message; and
 * falling back to `.dev.vars.example` is not warned about on every send (npm run dev warns once).
 */
import { execFile } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import PostalMime from 'postal-mime'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SAMPLE_EMAIL } from '../../local/email-delivery'
import { REPO_ROOT } from '../../local/wrangler-config'

const SCRIPT = join(REPO_ROOT, 'local', 'send-webhook.ts')
/** tsx by its path: the tool also runs from a folder with no node_modules. */
const TSX = pathToFileURL(join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href
const dir = mkdtempSync(join(tmpdir(), 'send-webhook-'))
let server: Server
let received = 0
let url = ''

beforeAll(async () => {
  server = createServer((req, res) => {
    received++
    req.resume()
    res.end('Worker successfully processed email')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve))
  rmSync(dir, { recursive: true, force: true })
})

function sendWebhook(
  args: string[],
  cwd = REPO_ROOT,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX, SCRIPT, ...args],
      { cwd, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
  })
}

describe('send-webhook email', () => {
  it.each([
    [
      'no Message-ID',
      'From: ada@customer.example\r\nTo: s@inbound.example\r\n\r\nhi\r\n',
      /has no Message-ID header: wrangler's local email endpoint refuses/,
    ],
    ['no From', 'Message-ID: <1@x>\r\nTo: s@inbound.example\r\n\r\nhi\r\n', /has no From address/],
    ['nothing at all', '', /is empty: no message to send/],
  ])('a message with %s: exit 1, what is missing said, nothing sent', async (_, text, says) => {
    const file = join(dir, `${text.length}.eml`)
    writeFileSync(file, text)
    const before = received
    const run = await sendWebhook(['email', '--file', file, '--url', url])
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(says)
    expect(received).toBe(before)
  })

  it('a file that is not there: said so, nothing sent', async () => {
    const before = received
    const run = await sendWebhook(['email', '--file', join(dir, 'mail.eml'), '--url', url])
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('mail.eml: cannot read it (ENOENT)')
    expect(received).toBe(before)
  })

  it('the README’s sample: sent whole, its envelope from its own From and To', async () => {
    const parsed = await PostalMime.parse(readFileSync(SAMPLE_EMAIL))
    expect(parsed.messageId).toBe('<hello.sample.1@customer.example>')
    const run = await sendWebhook(['email', '--file', SAMPLE_EMAIL, '--url', url, '--times', '2'])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^1\/2 email -> 200 taken by email\(\)/m)
    expect(run.stdout).toMatch(/^2\/2 email -> 200 /m)
    const curl = await sendWebhook(['email', '--file', SAMPLE_EMAIL, '--curl'])
    expect(curl.stdout).toContain(
      '/cdn-cgi/handler/email?from=ada%40customer.example&to=support%40inbound.example',
    )
  })
})

describe('send-webhook and .dev.vars.example', () => {
  it('signs with the example’s values without a warning on every send', async () => {
    const checkout = mkdtempSync(join(dir, 'checkout-'))
    copyFileSync(join(REPO_ROOT, '.dev.vars.example'), join(checkout, '.dev.vars.example'))
    const run = await sendWebhook(['slack', '--curl'], checkout)
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('x-slack-signature')
    expect(run.stderr).toBe('')
  })
})
