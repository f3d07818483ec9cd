import assert from 'node:assert/strict'
import { once } from 'node:events'
import net, { type AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import type { FastifyBaseLogger } from 'fastify'
import { buildApp, type AppOptions } from '../../src/app.js'
import { testConfig, type Config } from '../../src/config.js'
import { RefusalLog } from '../../src/http/logging/refusal-log.js'
import { QueryTooSlow } from '../../src/catalogue/errors.js'
import type { ListFilter, PlantStore } from '../../src/store/plant-store.js'
import { sqliteEngine } from '../helpers/engines.js'
import { logCollector, type LogLine } from '../helpers/log-lines.js'
import { overriding } from '../helpers/overriding.js'

const KEY = 'refusal-test-key-0123456789'
/** Long enough that no summary is written by its timer during a test: only close() writes it. */
const NEVER_MS = 600_000

/** A service (on `serve`'s view of a fresh store) logging at info into `log`; `close` may be called by the test, and is called when it ends. */
async function logged (t: TestContext, config: Partial<Config>, options: Omit<AppOptions, 'store' | 'logStream'> = {}, serve = (store: PlantStore) => store) {
  const store = await sqliteEngine.open()
  const log = logCollector()
  const app = await buildApp(testConfig({ logLevel: 'info', ...config }), { ...options, store: serve(store), logStream: log.stream })
  let closing: Promise<void> | undefined
  const close = async (): Promise<void> => { closing ??= app.close(); await closing }
  t.after(async () => { await close(); await store.close() })
  return { app, log, close }
}

const ofReason = (lines: LogLine[], reason: string): LogLine[] => lines.filter((l) => l.reason === reason)
const total = (lines: LogLine[]): number => lines.reduce((sum, l) => sum + (l.count as number), 0)

/** Sends raw bytes on a connection of its own and returns what came back before the close. */
async function raw (port: number, bytes: string): Promise<string> {
  const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes))
  let answer = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { answer += chunk })
  await once(socket, 'close')
  return answer
}

test('a flood of 200 refusals of one reason is a handful of lines, at most one an interval, whose counts add up to 200; the first is written in full at once', async (t) => {
  const interval = 200
  const { app, log } = await logged(t, { apiKeys: [KEY] }, { refusalSummaryMs: interval })
  const started = Date.now()
  for (let i = 0; i < 200; i++) {
    const res = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'x' }, headers: { 'x-request-id': `flood-${i}` } })
    assert.equal(res.statusCode, 401)
  }
  const first = ofReason(log.lines(), '401 unauthorized')[0]
  assert.deepEqual({ msg: first.msg, reqId: first.reqId, status: first.status, count: first.count }, { msg: 'request refused', reqId: 'flood-0', status: 401, count: 1 })
  // The timer writes the rest, the app still open.
  for (let waited = 0; total(ofReason(log.lines(), '401 unauthorized')) < 200 && waited < 5_000; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const elapsed = Date.now() - started
  const lines = ofReason(log.lines(), '401 unauthorized')
  assert.equal(total(lines), 200, JSON.stringify(lines))
  assert.ok(lines.length <= Math.ceil(elapsed / interval) + 1, `${lines.length} lines in ${elapsed} ms`)
  assert.ok(lines.length < 50, `${lines.length} lines`)
  const times = lines.map((l) => Date.parse(l.time))
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= interval - 2, `lines ${times[i] - times[i - 1]} ms apart`)
  for (const summary of lines.slice(1)) {
    assert.equal(summary.msg, 'refusals summarised')
    assert.equal(summary.reqId, undefined, 'a summary belongs to no one request')
    assert.match(summary.last.reqId, /^flood-\d+$/)
    assert.deepEqual([summary.last.method, summary.last.url, summary.last.status, summary.last.type, summary.last.client], ['POST', '/v3/plant', 401, '/v3/problems/unauthorized', '127.0.0.1'])
  }
  assert.equal(lines.at(-1)!.last.reqId, 'flood-199', 'the last summary names the latest refusal')
})

test('two reasons are summarised apart, each on its own lines', async (t) => {
  const { app, log, close } = await logged(t, { apiKeys: [KEY] }, { refusalSummaryMs: NEVER_MS })
  for (let i = 0; i < 100; i++) {
    assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'x' } })).statusCode, 401)
    assert.equal((await app.inject({ method: 'GET', url: `/nowhere/${i}?api_key=s3cret-in-url` })).statusCode, 404)
  }
  await close()
  const lines = log.lines()
  const unauthorized = ofReason(lines, '401 unauthorized')
  const unrouted = ofReason(lines, '404 route-not-found')
  assert.deepEqual(unauthorized.map((l) => [l.msg, l.count]), [['request refused', 1], ['refusals summarised', 99]])
  assert.deepEqual(unrouted.map((l) => [l.msg, l.count]), [['request refused', 1], ['refusals summarised', 99]])
  assert.equal(unrouted[1].last.url, '/nowhere/99?api_key=[redacted]', 'the latest URL, its key redacted')
  assert.doesNotMatch(JSON.stringify(lines), /s3cret-in-url/)
  assert.equal(lines.filter((l) => l.msg === 'request refused' || l.msg === 'refusals summarised').length, 4)
})

test('a pending summary is written when the app closes, and its timer keeps nothing alive', async (t) => {
  const { app, log, close } = await logged(t, {}, { refusalSummaryMs: NEVER_MS })
  const refs = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
  const before = refs()
  assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/999' })).statusCode, 404)
  for (let i = 0; i < 49; i++) assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/999' })).statusCode, 404)
  assert.equal(refs(), before, 'no timer holding the process')
  assert.equal(total(ofReason(log.lines(), '404 not-found')), 1, 'only the first is written before the close')
  await close()
  const lines = ofReason(log.lines(), '404 not-found')
  assert.equal(total(lines), 50)
  assert.equal(lines.at(-1)!.msg, 'refusals summarised')
})

test('a 5xx is logged once per request, with its error, amid a flood of refusals that is summarised', async (t) => {
  const { app, log, close } = await logged(t, {}, { refusalSummaryMs: NEVER_MS }, (store) => overriding(store, { list: async () => { throw new Error('a bug') } }))
  for (let i = 0; i < 30; i++) {
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant', headers: { 'x-request-id': `bug-${i}` } })).statusCode, 500)
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/999' })).statusCode, 404)
  }
  await close()
  const lines = log.lines()
  const errors = lines.filter((l) => l.msg === 'request answered with an error')
  assert.deepEqual(errors.map((l) => l.reqId), Array.from({ length: 30 }, (_, i) => `bug-${i}`))
  assert.ok(errors.every((l) => l.level === 'error' && l.status === 500 && l.err.message === 'a bug'))
  assert.equal(ofReason(lines, '404 not-found').length, 2)
})

test('requests the HTTP parser refuses and connections over the per-client cap are summarised too', async (t) => {
  const { app, log, close } = await logged(t, { maxConnectionsPerClient: 1 }, { refusalSummaryMs: NEVER_MS })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  for (let i = 0; i < 20; i++) assert.match(await raw(port, 'NOT HTTP AT ALL\r\n\r\n'), /^HTTP\/1\.1 400 /)
  await new Promise((resolve) => setImmediate(resolve)) // the server sees the parser's connections closed
  const held = net.connect(port, '127.0.0.1')
  t.after(() => { held.destroy() })
  await once(held, 'connect')
  held.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n') // answered: the server holds it as this client's one connection
  await once(held, 'data')
  for (let i = 0; i < 20; i++) assert.match(await raw(port, ''), /^HTTP\/1\.1 429 /)
  held.destroy()
  await close()
  const lines = log.lines()
  const parser = lines.filter((l) => String(l.reason).startsWith('parser HPE_'))
  assert.deepEqual(parser.map((l) => [l.msg, l.count]), [['request refused by the HTTP parser', 1], ['refusals summarised', 19]])
  assert.equal(parser[1].last.client, '127.0.0.1')
  const capped = ofReason(lines, 'connections per client')
  assert.deepEqual(capped.map((l) => [l.msg, l.count]), [['connection refused: too many open from this client', 1], ['refusals summarised', 19]])
  assert.deepEqual(capped[1].last, { client: '127.0.0.1', limit: 1 })
})

test('the refusal log on its own: a quiet interval ends the summary, and the next refusal is written in full again', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] })
  const written: Array<[Record<string, any>, string]> = []
  const log = { info: (line: Record<string, any>, msg: string) => { written.push([line, msg]) } } as unknown as FastifyBaseLogger
  const refusals = new RefusalLog(() => log, 1_000)
  const refuse = (client: string): void => { refusals.refused('429 too-many-requests', { client }, 'request refused') }
  refuse('10.0.0.1')
  refuse('10.0.0.2')
  refuse('10.0.0.3')
  t.mock.timers.tick(1_000) // the summary of the two after the first
  refuse('10.0.0.4')
  t.mock.timers.tick(1_000) // and of the one in the next interval
  t.mock.timers.tick(1_000) // a quiet interval: the summary ends
  refuse('10.0.0.5')
  refuse('10.0.0.6')
  refusals.close()
  assert.deepEqual(written.map(([line, msg]) => [msg, line.count, line.windowMs, line.client ?? line.last.client]), [
    ['request refused', 1, undefined, '10.0.0.1'],
    ['refusals summarised', 2, 1_000, '10.0.0.3'],
    ['refusals summarised', 1, 1_000, '10.0.0.4'],
    ['request refused', 1, undefined, '10.0.0.5'],
    ['refusals summarised', 1, 0, '10.0.0.6']
  ])
})

test('503s that shed load (a query over its time, a full send queue) are summarised like refusals, at warn, with no stack', async (t) => {
  const { app, log, close } = await logged(t, {}, { refusalSummaryMs: NEVER_MS }, (store) => overriding(store, {
    list: async () => { throw new QueryTooSlow('The search took longer than 2 s') }
  }))
  for (let i = 0; i < 30; i++) assert.equal((await app.inject({ method: 'GET', url: '/v3/plant?q=fern' })).statusCode, 503)
  await close()
  const lines = ofReason(log.lines(), '503 query-too-slow')
  assert.deepEqual(lines.map((l) => [l.msg, l.level, l.count]), [['request refused', 'warn', 1], ['refusals summarised', 'warn', 29]])
  assert.equal(lines[0].err, undefined, 'no stack')
  assert.equal(log.lines().filter((l) => l.level === 'error').length, 0, 'nothing at error')
})

test('429s of the read budget and of the rate limit are summarised apart', async (t) => {
  let release = (): void => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  let entered = (): void => {}
  const listing = new Promise<void>((resolve) => { entered = resolve })
  const { app, log, close } = await logged(t, { readBudget: 1, rateLimit: 5 }, { refusalSummaryMs: NEVER_MS }, (store) => overriding(store, {
    list: async (filter: ListFilter) => { entered(); await held; return await store.list(filter) }
  }))
  const running = app.inject({ method: 'GET', url: '/v3/plant' })
  await listing
  const answers = []
  for (let i = 0; i < 8; i++) answers.push((await app.inject({ method: 'GET', url: '/v3/plant' })).statusCode)
  release()
  assert.equal((await running).statusCode, 200)
  await close()
  assert.deepEqual(answers, [429, 429, 429, 429, 429, 429, 429, 429])
  const reasons = new Set(log.lines().filter((l) => l.status === 429 || l.last?.status === 429).map((l) => l.reason))
  assert.deepEqual([...reasons].sort(), ['429 too-many-requests (rate limit)', '429 too-many-requests (read budget)'])
})

test('a summary names the client address that sent the most of its refusals in that interval, with its count, besides the latest', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] })
  const written: Array<[Record<string, any>, string, string]> = []
  const log = {
    info: (line: Record<string, any>, msg: string) => { written.push([line, msg, 'info']) },
    warn: (line: Record<string, any>, msg: string) => { written.push([line, msg, 'warn']) }
  } as unknown as FastifyBaseLogger
  const refusals = new RefusalLog(() => log, 1_000)
  const refuse = (client: string): void => { refusals.refused('503 send-queue-full', { client }, 'request refused', undefined, 'warn') }
  refuse('10.0.0.9')
  for (let i = 0; i < 5; i++) refuse('10.0.0.1')
  refuse('10.0.0.2')
  t.mock.timers.tick(1_000)
  refuse('10.0.0.3')
  refuse('10.0.0.2')
  refuse('10.0.0.2')
  refusals.close()
  assert.deepEqual(written.map(([line, msg, level]) => [msg, level, line.count, line.top]), [
    ['request refused', 'warn', 1, undefined],
    ['refusals summarised', 'warn', 6, { client: '10.0.0.1', count: 5 }],
    ['refusals summarised', 'warn', 3, { client: '10.0.0.2', count: 2 }]
  ])
  assert.equal(written[1][0].last.client, '10.0.0.2')
})
