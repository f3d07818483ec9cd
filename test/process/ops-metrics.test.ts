import assert from 'node:assert/strict'
import net from 'node:net'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { StorageUnavailable } from '../../src/catalogue/errors.js'
import { overriding } from '../helpers/overriding.js'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'
import { logCollector } from '../helpers/log-lines.js'
import { send, startService, workerPids } from '../helpers/process.js'

/** The value of one series in Prometheus text (0 when absent). */
function value (text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

/** Sends raw bytes on a connection of its own and returns what came back before the close. */
async function raw (port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes))
    let answer = ''
    socket.on('data', (b: Buffer) => { answer += b.toString() })
    socket.on('close', () => resolve(answer))
    socket.on('error', reject)
  })
}

/** Prometheus text as a scraper wants it: no blank lines, one HELP and one TYPE a metric, ending in a newline. */
function assertCleanExposition (text: string): void {
  const lines = text.split('\n')
  assert.equal(lines.pop(), '', 'ends with a newline')
  assert.deepEqual(lines.flatMap((l, i) => l.trim() === '' ? [i + 1] : []), [], 'blank lines at')
  for (const kind of ['HELP', 'TYPE']) {
    const names = lines.filter((l) => l.startsWith(`# ${kind} `)).map((l) => l.split(' ')[2])
    assert.deepEqual(names.filter((n, i) => names.indexOf(n) !== i), [], `metrics with more than one ${kind}`)
  }
}

/** Scrapes until the primary sums both workers (the second may still be starting when /healthz first answers). */
async function bothWorkersSummed (url: string): Promise<void> {
  const deadline = Date.now() + 60_000 // a start-up's wait (as startService's), not a measure
  for (;;) {
    const scrape = await send(url, { method: 'GET', path: '/metrics' })
    assert.equal(scrape.status, 200)
    if (value(scrape.body, 'cluster_workers_summed') === 2) return
    assert.ok(Date.now() < deadline, `the primary never summed both workers:\n${scrape.body.split('\n').filter((l) => l.startsWith('cluster_')).join('\n')}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('metrics', () => {
  test('with WORKERS=2, /metrics counts the requests of every worker, whichever worker answers the scrape', async (t) => {
    const service = await startService({ env: { WORKERS: '2', SHUTDOWN_GRACE_MS: '0' }, readyTimeoutMs: 60_000 })
    t.after(() => service.stop())
    await bothWorkersSummed(service.url)
    // One connection a request: the primary hands connections to the workers in turn.
    for (let i = 0; i < 10; i++) {
      assert.equal((await send(service.url, { method: 'GET', path: '/v3/plant/999' })).status, 404)
    }
    const series = 'http_request_duration_seconds_count{method="GET",route="/v3/plant/:id",status_code="404"}'
    for (let i = 0; i < 4; i++) {
      const scrape = await send(service.url, { method: 'GET', path: '/metrics' })
      assert.equal(scrape.status, 200)
      assert.equal(value(scrape.body, 'cluster_workers_unanswered'), 0)
      assert.equal(value(scrape.body, series), 10, scrape.body.split('\n').filter((l) => l.includes('plant/:id')).join('\n'))
      assert.ok(value(scrape.body, 'process_resident_memory_bytes') > 0)
      assertCleanExposition(scrape.body)
      // An info gauge is 1 after the sum too (each worker says 1 for the same labels).
      const info = scrape.body.split('\n').filter((l) => l.startsWith('plant_catalogue_info{'))
      assert.equal(info.length, 1, info.join('\n'))
      assert.match(info[0], /\} 1$/)
    }
  })

  test('with WORKERS=2 and one worker not answering (its loop held), a scrape still answers 200: the other worker\'s figures and the gauge of the one left out', async (t) => {
    const service = await startService({ env: { WORKERS: '2', SHUTDOWN_GRACE_MS: '0' }, readyTimeoutMs: 60_000 })
    const [held, other] = workerPids(service.pid)
    assert.ok(held !== undefined && other !== undefined, 'two workers')
    t.after(async () => { process.kill(held, 'SIGCONT'); await service.stop() })
    await bothWorkersSummed(service.url)
    // A stopped process is, to the primary, a worker whose event loop never turns: the IPC
    // question stays unanswered, exactly as behind a long synchronous task, and it needs no hook
    // in the service. The primary may have handed one of the scrapes to the held worker (it waits
    // for it), so two are sent, each on a connection of its own: the other worker answers one.
    process.kill(held, 'SIGSTOP')
    const scrapes = [0, 1].map(async () => send(service.url, { method: 'GET', path: '/metrics' }))
    const first = await Promise.race(scrapes)
    assert.equal(first.status, 200)
    assert.equal(value(first.body, 'cluster_workers_unanswered'), 1)
    assert.equal(value(first.body, 'cluster_workers_summed'), 1)
    assert.ok(value(first.body, 'process_resident_memory_bytes') > 0)
    assertCleanExposition(first.body)
    process.kill(held, 'SIGCONT')
    const all = await Promise.all(scrapes)
    assert.deepEqual(all.map((a) => a.status), [200, 200])
    // One warning line for each scrape that left a worker out, naming it.
    const partial = all.filter((a) => value(a.body, 'cluster_workers_unanswered') === 1).length
    const warnings = service.output().split('\n').filter((l) => l.includes('did not answer'))
    assert.equal(warnings.length, partial, service.output())
    assert.ok(warnings.every((l) => JSON.parse(l).level === 'warn' && JSON.parse(l).unansweredWorkers[0] === held), warnings.join('\n'))
    // Back to both once the worker turns again.
    await bothWorkersSummed(service.url)
  })

  test('with WORKERS=2, 200 scrapes sent while one worker is held for 10 s all answer 200', async (t) => {
    const service = await startService({ env: { WORKERS: '2', SHUTDOWN_GRACE_MS: '0' }, readyTimeoutMs: 60_000 })
    const [held] = workerPids(service.pid)
    assert.ok(held !== undefined, 'two workers')
    t.after(async () => { process.kill(held, 'SIGCONT'); await service.stop() })
    await bothWorkersSummed(service.url)
    process.kill(held, 'SIGSTOP')
    // One scrape every 50 ms for the 10 s of the hold, each on a connection of its own, as a
    // Prometheus scraping this instance (or several scraping it) would: the ones the primary
    // hands to the held worker wait for it, the others are answered by the other worker meanwhile.
    let stillHeld = true
    const scrapes: Array<Promise<{ status: number, unanswered: number, duringHold: boolean }>> = []
    for (let i = 0; i < 200; i++) {
      scrapes.push(send(service.url, { method: 'GET', path: '/metrics' }).then((a) => ({ status: a.status, unanswered: value(a.body, 'cluster_workers_unanswered'), duringHold: stillHeld })))
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    stillHeld = false
    process.kill(held, 'SIGCONT')
    const answers = await Promise.all(scrapes)
    assert.deepEqual(answers.filter((a) => a.status !== 200), [], 'every scrape answers 200')
    // Answered while the worker was held, a scrape names it as left out: none pretends to sum it.
    const duringHold = answers.filter((a) => a.duringHold)
    assert.ok(duringHold.length > 0, 'the other worker answered while one was held')
    assert.deepEqual(duringHold.filter((a) => a.unanswered !== 1), [], 'scrapes answered during the hold report the held worker')
    t.diagnostic(`${answers.length} scrapes, all 200; ${duringHold.length} answered during the 10 s hold`)
  })

  test('the exposition of one process has no blank lines and one HELP and TYPE a metric', async (t) => {
    const { app } = await build(t, sqliteEngine)
    const scrape = await app.inject({ method: 'GET', url: '/metrics' })
    assert.equal(scrape.statusCode, 200)
    assertCleanExposition(scrape.body)
    assert.match(scrape.body, /^plant_catalogue_info\{.*\} 1$/m)
  })

  test('storage failures are a series of their own, by engine and cause', async (t) => {
    const store = await sqliteEngine.open()
    const full = overriding(store, {
      create: async () => { throw new StorageUnavailable('sqlite: SQLITE_FULL', Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })) },
      get: async () => { throw new StorageUnavailable('postgres: no answer within 1500 ms') }
    })
    const app = await buildApp(testConfig(), { store: full })
    t.after(async () => { await app.close(); await store.close() })
    assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'a' } })).statusCode, 503)
    assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'b' } })).statusCode, 503)
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/1' })).statusCode, 503)
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body
    assert.equal(value(text, 'storage_errors_total{engine="sqlite",cause="SQLITE_FULL"}'), 2)
    assert.equal(value(text, 'storage_errors_total{engine="sqlite",cause="timeout"}'), 1)
  })

  test('group-commit sizes are a histogram of writes per commit', async (t) => {
    const { app } = await build(t, sqliteEngine)
    const scrape = async (): Promise<string> => (await app.inject({ method: 'GET', url: '/metrics' })).body
    const before = await scrape()
    // Three writes in one turn of the event loop share one commit.
    const answers = await Promise.all(['a', 'b', 'c'].map((name) => app.inject({ method: 'POST', url: '/v3/plant', payload: { name } })))
    assert.ok(answers.every((a) => a.statusCode === 200))
    const after = await scrape()
    const delta = (series: string): number => value(after, series) - value(before, series)
    assert.equal(delta('storage_commit_writes_sum{engine="sqlite"}'), 3)
    assert.ok(delta('storage_commit_writes_count{engine="sqlite"}') >= 1)
    assert.equal(delta('storage_commit_writes_bucket{le="+Inf",engine="sqlite"}'), delta('storage_commit_writes_count{engine="sqlite"}'))
    assert.match(after, /# TYPE storage_commit_writes histogram/)
  })

  test('with keys configured /metrics needs one (Bearer, like writes); without keys it is open', async (t) => {
    const secured = await build(t, sqliteEngine, { apiKeys: ['scrape-key'] })
    for (const method of ['GET', 'HEAD'] as const) {
      const anonymous = await secured.app.inject({ method, url: '/metrics' })
      assert.equal(anonymous.statusCode, 401, method)
      assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="plant-catalogue"')
      assert.equal((await secured.app.inject({ method, url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode, 401)
      assert.equal((await secured.app.inject({ method, url: '/metrics', headers: { authorization: 'Bearer scrape-key' } })).statusCode, 200)
    }
    assert.equal((await secured.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200, 'probes stay open')
    const open = await build(t, sqliteEngine)
    assert.equal((await open.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200)
  })

  test('requests the HTTP parser refuses (400, 431) are counted by code and logged with the client address', async (t) => {
    const store = await sqliteEngine.open()
    const log = logCollector()
    const app = await buildApp(testConfig({ logLevel: 'info' }), { store, logStream: log.stream })
    t.after(async () => { await app.close(); await store.close() })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as net.AddressInfo
    const scrape = async (): Promise<string> => (await app.inject({ method: 'GET', url: '/metrics' })).body
    const before = await scrape()
    assert.match(await raw(port, 'NOT HTTP AT ALL\r\n\r\n'), /^HTTP\/1\.1 400 /)
    assert.match(await raw(port, `GET /v3/plant HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`), /^HTTP\/1\.1 431 /)
    const after = await scrape()
    const delta = (code: string): number => value(after, `http_parser_refusals_total{code="${code}"}`) - value(before, `http_parser_refusals_total{code="${code}"}`)
    assert.equal(delta('HPE_HEADER_OVERFLOW'), 1)
    assert.equal([...after.matchAll(/^http_parser_refusals_total\{code="(HPE_INVALID_[A-Z_]+)"\} (\d+)$/gm)].length > 0, true, after)
    const logged = log.lines().filter((l) => l.msg === 'request refused by the HTTP parser')
    assert.equal(logged.length, 2)
    assert.ok(logged.every((l) => l.level === 'info' && l.client === '127.0.0.1' && /^HPE_/.test(l.code)), JSON.stringify(logged))
  })
})
