import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'
import { freePort } from '../helpers/process.js'
import { until } from '../helpers/receiver.js'

// The webhook receiver of docs/webhooks.md, run as written: it takes the service's signed deliveries and
// refuses a forged one.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const WEBHOOKS_DOC = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8')

test('the receiver of docs/webhooks.md, in 15 lines, verifies what the service sends and refuses a forgery', async (t) => {
  const code = /```js\n([\s\S]*?)```/.exec(WEBHOOKS_DOC)?.[1]
  assert.ok(code, 'docs/webhooks.md holds a js block')
  assert.ok(code.trimEnd().split('\n').length <= 15, 'the receiver stays within 15 lines')
  const api = await build(t, sqliteEngine, { webhookAllowPrivate: true })
  const port = await freePort()
  const { id, secret } = (await api.request({ method: 'POST', url: '/v3/webhooks', payload: { url: `http://127.0.0.1:${port}/` } })).json()
  // Run from the checkout so that `standardwebhooks` resolves from its node_modules.
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT, env: { PATH: process.env.PATH, WEBHOOK_SECRET: secret, PORT: String(port) } })
  t.after(() => { child.kill() })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => { out += s })
  const plant = await api.add({ name: 'Monstera' })
  await until('the receiver logged the change', () => out.includes(`${id}-`))
  assert.match(out, new RegExp(`^${id}-\\d+ created ${plant.id} 1$`, 'm'))
  const forged = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    body: '{"kind":"deleted"}',
    headers: { 'webhook-id': 'x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,' + Buffer.alloc(32).toString('base64') }
  })
  assert.equal(forged.status, 401)
})
