import assert from 'node:assert/strict'
import fs from 'node:fs'
import net, { type AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { sqliteEngine } from '../helpers/engines.js'

// Answers given before any route runs (by node:http, by Fastify's router, by a failing file stream)
// come in the contract's problem shape like every other error.

async function listening (t: TestContext): Promise<{ app: FastifyInstance, port: number }> {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig(), { store })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.after(async () => { await app.close(); await store.close() })
  return { app, port: (app.server.address() as AddressInfo).port }
}

interface RawAnswer { status: number, headers: Record<string, string>, body: string }

/** Writes `text` on one connection and splits what comes back into responses (each has a Content-Length). */
async function exchange (port: number, text: string, expected: number, untilClosed = false): Promise<{ answers: RawAnswer[], closed: boolean }> {
  const socket = net.connect(port, '127.0.0.1')
  let data = Buffer.alloc(0)
  let closed = false
  const answers: RawAnswer[] = []
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => resolve(), 5000)
    socket.on('error', reject)
    socket.on('close', () => { closed = true; clearTimeout(timer); resolve() })
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      for (;;) {
        const end = data.indexOf('\r\n\r\n')
        if (end < 0) break
        const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n')
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
        const length = Number(headers['content-length'] ?? 0)
        if (data.length < end + 4 + length) break
        answers.push({ status: Number(statusLine.split(' ')[1]), headers, body: data.subarray(end + 4, end + 4 + length).toString() })
        data = data.subarray(end + 4 + length)
      }
      if (answers.length >= expected && !untilClosed) { clearTimeout(timer); resolve() }
    })
    socket.write(text)
  })
  socket.destroy()
  return { answers, closed }
}

function assertProblem (answer: { status: number, headers: Record<string, unknown>, body: string }, status: number, code: string): Record<string, unknown> {
  assert.equal(answer.status, status, answer.body)
  assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8')
  const body = JSON.parse(answer.body)
  assert.equal(body.type, `/v3/problems/${code}`)
  assert.equal(body.status, status)
  assert.equal(typeof body.requestId, 'string')
  assert.equal(answer.headers['x-request-id'], body.requestId)
  return body
}

test('an HTTP/1.1 request without Host is answered 400 invalid-input in the problem shape, and the connection closes', async (t) => {
  const { port } = await listening(t)
  const { answers, closed } = await exchange(port, 'GET /healthz HTTP/1.1\r\n\r\n', 1, true)
  const body = assertProblem(answers[0], 400, 'invalid-input')
  assert.match(String(body.detail), /Host/)
  assert.equal(answers[0].headers.connection, 'close')
  assert.ok(closed)
  // HTTP/1.0 has no Host requirement.
  const old = await exchange(port, 'GET /healthz HTTP/1.0\r\n\r\n', 1)
  assert.equal(old.answers[0].status, 200)
})

test('an Expect other than 100-continue is answered 417 in the problem shape', async (t) => {
  const { port } = await listening(t)
  const { answers } = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n', 1)
  assertProblem(answers[0], 417, 'invalid-input')
})

test('Expect: 100-continue: a refusal that needs no body is the first answer (no 100 Continue, the body never sent); a body that will be read gets 100 Continue', async (t) => {
  const { app, port } = await listening(t)
  const plant = (await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } })).json()
  const upload = (path: string, type: string): string =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: 3000000\r\nExpect: 100-continue\r\n\r\n`
  assertProblem((await exchange(port, upload(`/v3/plant/${plant.id}/photos`, 'text/plain'), 1)).answers[0], 415, 'unsupported-media-type')
  assertProblem((await exchange(port, upload('/v3/plant/999/photos', 'image/jpeg'), 1)).answers[0], 404, 'not-found')
  assertProblem((await exchange(port, upload('/v3/plant/x1/photos', 'image/jpeg'), 1)).answers[0], 400, 'invalid-id')
  assert.equal((await exchange(port, upload(`/v3/plant/${plant.id}/photos`, 'image/jpeg'), 1)).answers[0].status, 100)
  const json = 'POST /v3/plant HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\nExpect: 100-continue\r\n\r\n'
  assert.equal((await exchange(port, json, 1)).answers[0].status, 100)
})

test('a malformed percent-encoding in the path is 400 and an over-long path segment 414, both problems, not Fastify bodies', async (t) => {
  const { app } = await listening(t)
  const bad = await app.inject({ method: 'GET', url: '/v3/plant/%zz' })
  assertProblem({ status: bad.statusCode, headers: bad.headers, body: bad.body }, 400, 'invalid-input')
  const long = await app.inject({ method: 'GET', url: `/v3/plant/${'1'.repeat(120)}` })
  assertProblem({ status: long.statusCode, headers: long.headers, body: long.body }, 414, 'invalid-input')
})

test('a docs asset whose file cannot be opened (EMFILE) is 503 storage-unavailable with Retry-After, without the file\'s headers', async (t) => {
  const { app } = await listening(t)
  const open = fs.open
  // Out of descriptors for this one file only: the stream's open fails after the file's headers were set.
  t.mock.method(fs, 'open', function (this: unknown, path: fs.PathLike, ...rest: unknown[]) {
    if (!String(path).endsWith('swagger-ui.css')) return (open as (...a: unknown[]) => void).call(fs, path, ...rest)
    const callback = rest[rest.length - 1] as (err: Error) => void
    process.nextTick(callback, Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE', syscall: 'open' }))
  })
  const res = await app.inject({ method: 'GET', url: '/v3/docs/static/swagger-ui.css' })
  assertProblem({ status: res.statusCode, headers: res.headers, body: res.body }, 503, 'storage-unavailable')
  assert.equal(res.headers['retry-after'], '1')
  assert.equal(res.headers['cache-control'], 'no-store')
  for (const name of ['etag', 'last-modified', 'accept-ranges']) assert.equal(res.headers[name], undefined, name)
  t.mock.restoreAll()
  assert.equal((await app.inject({ method: 'GET', url: '/v3/docs/static/swagger-ui.css' })).statusCode, 200)
})

test('a client reading its pipelined requests gets every answer, in order, writes included', async (t) => {
  const { port } = await listening(t)
  const requests: string[] = []
  for (let i = 0; i < 10; i++) {
    const body = JSON.stringify({ name: `Pipelined ${i}` })
    requests.push(`POST /v3/plant HTTP/1.1\r\nHost: x\r\nX-Request-Id: post-${i}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
    requests.push(`GET /v3/plant/${i + 1} HTTP/1.1\r\nHost: x\r\nX-Request-Id: get-${i}\r\n\r\n`)
    requests.push(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: health-${i}\r\n\r\n`)
  }
  const { answers } = await exchange(port, requests.join(''), requests.length)
  assert.deepEqual(answers.map((a) => a.headers['x-request-id']), Array.from({ length: 10 }, (_, i) => [`post-${i}`, `get-${i}`, `health-${i}`]).flat())
  assert.ok(answers.every((a) => a.status === 200), answers.map((a) => a.status).join(' '))
  assert.deepEqual(answers.filter((_, k) => k % 3 === 1).map((a) => JSON.parse(a.body).name), Array.from({ length: 10 }, (_, i) => `Pipelined ${i}`))
})
