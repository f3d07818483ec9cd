import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { ENGINES } from '../helpers/engines.js'

// Hostile bytes on a real socket, below anything inject can send: each gets a 4xx or a closed
// connection, never a 5xx, a stack trace or a crash, and the catalogue is unchanged afterwards.

interface Outcome {
  /** The status of the response, if one came. */
  status?: number
  head: string
  body: string
  /** The server closed the connection (with or without a response). */
  closed: boolean
}

/**
 * Writes `parts` (pausing `gapMs` between them), half-closes if `end` (Node's server drops a half-closed
 * connection instead of answering it, so only a client that gives up does that), and reads one response.
 * Resolves when a whole response arrived, the connection closed, or `waitMs` passed.
 */
async function exchange (port: number, parts: Array<string | Buffer>, options: { end?: boolean, gapMs?: number, waitMs?: number } = {}): Promise<Outcome> {
  const socket = net.connect(port, '127.0.0.1')
  let data = Buffer.alloc(0)
  let closed = false
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, options.waitMs ?? 10_000)
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      if (complete(data)) { clearTimeout(timer); resolve() }
    })
    socket.on('close', () => { closed = true; clearTimeout(timer); resolve() })
    socket.on('error', () => { /* a reset is a closed connection; 'close' follows */ })
  })
  await new Promise<void>((resolve) => socket.once('connect', resolve))
  for (const part of parts) {
    if (socket.destroyed || closed) break
    socket.write(part)
    if (options.gapMs) await new Promise((resolve) => setTimeout(resolve, options.gapMs))
  }
  if (options.end ?? false) socket.end()
  await done
  socket.destroy()
  const text = data.toString('utf8')
  const split = text.indexOf('\r\n\r\n')
  const head = split < 0 ? text : text.slice(0, split)
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1]
  return { status: status === undefined ? undefined : Number(status), head, body: split < 0 ? '' : text.slice(split + 4), closed }
}

function complete (data: Buffer): boolean {
  const text = data.toString('latin1')
  const split = text.indexOf('\r\n\r\n')
  if (split < 0) return false
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, split))?.[1]
  return length !== undefined && data.length - split - 4 >= Number(length)
}

const STACK = /\bat [\w.<>]+ \(|node:internal|node_modules|\/work\/|\.ts:\d+|SQLITE_|SqliteError/

/** A 4xx or a closed connection; never a 5xx, a stack trace or internals. */
function assertRefused (outcome: Outcome, what: string): void {
  assert.doesNotMatch(outcome.head + outcome.body, STACK, `${what}: internals leaked`)
  if (outcome.status === undefined) {
    assert.ok(outcome.closed, `${what}: neither an answer nor a closed connection`)
    return
  }
  assert.ok(outcome.status >= 400 && outcome.status < 500, `${what}: answered ${outcome.status}\n${outcome.head}\n${outcome.body}`)
}

/** The contract's problem body with the status of the response. */
function assertProblem (outcome: Outcome, what: string): void {
  assert.match(outcome.head, /\r\ncontent-type: application\/json; charset=utf-8/i, `${what}: ${outcome.head}`)
  const body = JSON.parse(outcome.body)
  assert.equal(body.status, outcome.status, what)
  assert.match(body.type, /\/v3\/problems\//, what)
  assert.equal(typeof body.title, 'string', what)
  assert.equal(typeof body.requestId, 'string', what)
}

const post = (body: string | Buffer, path = '/v3/plant', method = 'POST'): Buffer => Buffer.concat([
  Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`),
  Buffer.isBuffer(body) ? body : Buffer.from(body)
])

for (const engine of ENGINES) {
  describe(`hostile input on a socket, ${engine.name}`, { skip: engine.skip }, () => {
    let app: FastifyInstance
    let store: PlantStore
    let port: number
    let before_: string
    const snapshot = async (): Promise<string> =>
      JSON.stringify({ plants: await store.list({ afterId: 0, limit: 1_000_000 }), changes: await store.changes(0, 1_000_000) })

    before(async () => {
      store = await engine.open()
      app = await buildApp(testConfig(), { store })
      await app.listen({ host: '127.0.0.1', port: 0 })
      port = (app.server.address() as net.AddressInfo).port
      for (const name of ['Monstera', 'Ficus']) await app.inject({ method: 'POST', url: '/v3/plant', payload: { name, tags: ['kept'] } })
      before_ = await snapshot()
    })
    after(async () => {
      await app.close()
      await store.close()
    })

    test('broken request lines and framing get a 4xx or a closed connection', async () => {
      const cases: Record<string, string | Buffer> = {
        'not HTTP': 'GARBAGE\r\n\r\n',
        'method only': 'GET\r\n\r\n',
        'unknown version': 'GET /v3/plant HTTP/9.9\r\nHost: x\r\n\r\n',
        'control bytes': Buffer.from([0, 1, 2, 3, 13, 10, 13, 10]),
        'space in the target': 'GET /v3/pl ant HTTP/1.1\r\nHost: x\r\n\r\n',
        'header without colon': 'GET /v3/plant HTTP/1.1\r\nHost x\r\n\r\n',
        'two Content-Lengths': 'POST /v3/plant HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\nContent-Length: 14\r\n\r\n{"name":"ab"}',
        'chunked and Content-Length (smuggling)': 'POST /v3/plant HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\nd\r\n{"name":"ab"}\r\n0\r\n\r\n',
        'bad chunk size': 'POST /v3/plant HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
        'negative Content-Length': 'POST /v3/plant HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n{}',
        'request target not a path': 'GET http://[::1 HTTP/1.1\r\nHost: x\r\n\r\n',
        'percent garbage in the path': 'GET /v3/plant/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
        'NUL in a header value': 'GET /v3/plant HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n'
      }
      for (const [what, bytes] of Object.entries(cases)) assertRefused(await exchange(port, [bytes]), what)
      assert.equal(await snapshot(), before_)
    })

    test('endless headers are cut off with 431 or a closed connection', async () => {
      const lines = Array.from({ length: 4000 }, (_, i) => `X-Filler-${i}: ${'a'.repeat(200)}\r\n`)
      const outcome = await exchange(port, ['GET /v3/plant HTTP/1.1\r\nHost: x\r\n', ...lines], { end: false })
      assertRefused(outcome, 'endless headers')
      const one = await exchange(port, [`GET /v3/plant HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(1 << 20)}\r\n\r\n`], { end: false })
      assertRefused(one, 'one endless header line')
    })

    test('an unfinished body (the client gives up half way) is not stored and answers no 5xx', async () => {
      const full = post('{"name":"Half a plant","tags":["cut"]}')
      const outcome = await exchange(port, [full.subarray(0, full.length - 10)], { end: true, waitMs: 15_000 })
      assertRefused(outcome, 'unfinished body')
      assert.equal(await snapshot(), before_)
    })

    test('deep nesting: arrays nested tens of thousands deep are refused as invalid input or too large', async () => {
      const nested = (n: number) => '['.repeat(n) + ']'.repeat(n)
      const inside = await exchange(port, [post(nested(30_000))])
      assert.equal(inside.status, 405)
      assertProblem(inside, 'nested 30k deep')
      const inMember = await exchange(port, [post(`{"name":"a","tags":${nested(30_000)}}`)])
      assert.equal(inMember.status, 405)
      assertProblem(inMember, 'nested in a member')
      const inPut = await exchange(port, [post(`{"id":1,"name":"a","category":${nested(30_000)}}`, '/v3/plant', 'PUT')])
      assert.equal(inPut.status, 400)
      assertProblem(inPut, 'nested in a PUT')
      const huge = await exchange(port, [post(nested(100_000))])
      assert.equal(huge.status, 413)
      assertProblem(huge, 'nested 100k deep (over the body limit)')
      // Chunked: no Content-Length to refuse up front, so the limit must stop the stream.
      const chunk = nested(100_000)
      const chunked = await exchange(port, [
        'POST /v3/plant HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
        `${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`
      ])
      assertRefused(chunked, 'nested 100k deep, chunked')
      if (chunked.status !== undefined) assert.equal(chunked.status, 413)
      assert.equal(await snapshot(), before_)
    })

    test('huge numbers are invalid ids or invalid input, never a 5xx', async () => {
      const ids = ['1e400', '-1e400', '123456789012345678901234567890', '9007199254740993', '1'.repeat(60_000), '0.0000001', '-0', '1e-400']
      for (const id of ids) {
        const outcome = await exchange(port, [post(`{"id":${id},"name":"Huge"}`, '/v3/plant', 'PUT')])
        assert.equal(outcome.status, 400, `PUT id ${id.slice(0, 40)}: ${outcome.body}`)
        assertProblem(outcome, `PUT id ${id.slice(0, 40)}`)
        assert.match(JSON.parse(outcome.body).type, /invalid-id$/)
      }
      for (const body of ['{"name":1e400}', '{"name":"a","tags":[1e400]}', `{"name":"a","status":${'9'.repeat(50_000)}}`]) {
        const outcome = await exchange(port, [post(body)])
        assert.equal(outcome.status, 405, body.slice(0, 60))
        assertProblem(outcome, body.slice(0, 60))
      }
      for (const path of ['/v3/plant/1e400', `/v3/plant/${'9'.repeat(5000)}`, '/v3/plant?limit=1e400', `/v3/plant?cursor=${'9'.repeat(5000)}`]) {
        const outcome = await exchange(port, [`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`])
        assertRefused(outcome, path.slice(0, 60))
      }
      assert.equal(await snapshot(), before_)
    })

    test('a slowloris client trickling headers does not stop others from being served meanwhile', async () => {
      const stop = { now: false }
      const trickle = async (): Promise<void> => {
        const socket = net.connect(port, '127.0.0.1')
        socket.on('error', () => {})
        await new Promise<void>((resolve) => socket.once('connect', resolve))
        socket.write('GET /v3/plant HTTP/1.1\r\nHost: x\r\n')
        for (let i = 0; !stop.now && !socket.destroyed; i++) {
          socket.write(`X-Slow-${i}: y\r\n`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        socket.destroy()
      }
      const slow = Array.from({ length: 50 }, trickle)
      try {
        await new Promise((resolve) => setTimeout(resolve, 300))
        for (let i = 0; i < 20; i++) {
          const outcome = await exchange(port, ['GET /v3/plant HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'])
          assert.equal(outcome.status, 200, `request ${i} while 50 slow clients hold connections: ${outcome.head}`)
        }
      } finally {
        stop.now = true
        await Promise.all(slow)
      }
    })

    test('client errors the HTTP parser answers use the contract\'s problem shape', async () => {
      const broken = await exchange(port, ['GARBAGE\r\n\r\n'])
      assert.equal(broken.status, 400)
      assertProblem(broken, 'broken request line')
    })

    test('invalid UTF-8 in a JSON body is invalid input, not stored', async () => {
      const outcome = await exchange(port, [post(Buffer.concat([Buffer.from('{"name":"x'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]))])
      assert.equal(outcome.status, 405, outcome.body)
      assertProblem(outcome, 'invalid UTF-8')
      assert.equal(await snapshot(), before_)
    })
  })
}
