import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { StorageUnavailable } from '../../src/catalogue/errors.js'
import { overriding } from '../helpers/overriding.js'
import { sqliteEngine } from '../helpers/engines.js'
import { logCollector, parseLines } from '../helpers/log-lines.js'
import { TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { freePort, ROOT, send, serviceCommand, serviceEnv, startService } from '../helpers/process.js'
import { DatabaseProxy, sleep } from '../helpers/scale.js'

const NEEDS_PG = TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set'

async function waitFor (what: string, check: () => boolean, ms = 30_000): Promise<void> {
  const until = Date.now() + ms
  while (!check()) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`)
    await sleep(20)
  }
}

describe('shutdown', () => {
  test('SIGTERM on an idle service still answers /readyz 503 before closing, logs it once at info, and ends with "stopped" and the drain time', async () => {
    // A grace of 1.5 s, not the 5 s default: the probes below answer 503 all through it.
    const service = await startService({ env: { LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '1500' } })
    await sleep(500) // idle: no request for longer than the 300 ms that cuts the grace short
    service.child.kill('SIGTERM')
    await waitFor('the shutdown line', () => service.output().includes('"shutting down"'))
    const statuses: Array<number | string> = []
    for (;;) {
      const answer = await send(service.url, { method: 'GET', path: '/readyz' }).catch((err: NodeJS.ErrnoException) => err.code ?? String(err))
      statuses.push(typeof answer === 'string' ? answer : answer.status)
      if (typeof answer === 'string') break
      assert.equal(answer.status, 503)
      assert.equal(answer.json().title, 'Service shutting down')
      await sleep(100)
    }
    const exit = await service.exited
    assert.equal(exit.code, 0)
    assert.ok(statuses.filter((s) => s === 503).length >= 2, `probes during the drain: ${statuses.join(', ')}`)
    const lines = parseLines(service.output())
    const readiness = lines.filter((l) => /readiness/.test(l.msg))
    assert.deepEqual(readiness.map((l) => [l.level, l.msg]), [['info', 'readiness answers 503: shutting down']])
    const fromSignal = lines.slice(lines.findIndex((l) => l.msg === 'shutting down'))
    assert.deepEqual(fromSignal.filter((l) => l.level === 'error' || l.level === 'warn'), [], 'no error or warning per probe')
    const stopped = lines.at(-1)!
    assert.equal(stopped.msg, 'stopped')
    assert.equal(typeof stopped.drainMs, 'number')
    assert.equal(typeof stopped.closeMs, 'number')
  })
})

describe('readiness says why', () => {
  test('/readyz 503 names the storage failure in its detail, and the log has one line per change, not one per probe', async (t) => {
    const store = await sqliteEngine.open()
    let failure: Error | undefined
    const flaky = overriding(store, {
      ping: async () => { if (failure) throw failure; return store.ping() }
    })
    const log = logCollector()
    const app = await buildApp(testConfig({ logLevel: 'info' }), { store: flaky, logStream: log.stream })
    t.after(async () => { await app.close(); await store.close() })
    failure = new StorageUnavailable('sqlite: SQLITE_FULL', Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }))
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'GET', url: '/readyz' })
      assert.equal(res.statusCode, 503)
      assert.equal(res.json().detail, 'Storage is unavailable: SQLITE_FULL')
    }
    failure = new StorageUnavailable('postgres: connect', Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432'), { code: 'ECONNREFUSED' }))
    const refused = (await app.inject({ method: 'GET', url: '/readyz' })).json()
    assert.equal(refused.detail, 'Storage is unavailable: connection refused (ECONNREFUSED)')
    assert.doesNotMatch(refused.detail, /10\.1\.2\.3/, 'no address reaches a client')
    failure = undefined
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    const said = log.lines().filter((l) => /readiness/.test(l.msg)).map((l) => [l.level, l.reason ?? null, l.msg])
    assert.deepEqual(said, [
      ['warn', 'SQLITE_FULL', 'readiness answers 503: storage is unavailable'],
      ['warn', 'connection refused (ECONNREFUSED)', 'readiness answers 503: storage is unavailable'],
      ['info', null, 'readiness answers 200: storage is reachable again']
    ])
    assert.equal(log.lines().filter((l) => l.err?.stack).length, 0, 'no stack per probe')
  })

  test('a PostgreSQL that refuses connections at start-up is reported at start-up with its cause; /readyz and the first request answer 503', async (t) => {
    const port = await freePort() // nothing listens there
    const service = await startService({ env: { LOG_LEVEL: 'info', DATABASE_URL: `postgres://plants:s3cret-pw@127.0.0.1:${port}/catalogue` } })
    t.after(() => service.stop())
    const first = await send(service.url, { method: 'GET', path: '/v3/plant/1' })
    assert.equal(first.status, 503, first.body)
    assert.equal(first.headers['retry-after'], '1')
    const ready = await send(service.url, { method: 'GET', path: '/readyz' })
    assert.equal(ready.status, 503)
    assert.equal(ready.json().detail, 'Storage is unavailable: connection refused (ECONNREFUSED)')
    const lines = parseLines(service.output())
    const report = lines.find((l) => l.msg === 'storage is not reachable yet: answering 503 and retrying')
    assert.ok(report, service.output())
    assert.equal(report.level, 'warn')
    assert.equal(report.reason, 'connection refused (ECONNREFUSED)')
    const started = lines.findIndex((l) => l.msg === 'plant catalogue started')
    assert.ok(lines.indexOf(report) < started, 'reported before the service says it started')
    assert.ok(!service.output().includes('s3cret-pw'), 'the password is never logged')
  })

  for (const [what, path, user, pattern] of [
    ['an unknown database', '/t_no_such_database', 'postgres', /database "t_no_such_database" does not exist \(3D000\)/],
    ['an unknown role (an authentication failure)', '', 't_no_such_role', /role "t_no_such_role" does not exist \(28000\)/]
  ] as const) {
    test(`${what} stops the start with one line naming the database and the cause, never the password`, { skip: NEEDS_PG }, async () => {
      const url = new URL(TEST_DATABASE_URL!)
      url.username = user
      url.password = 's3cret-pw'
      if (path) url.pathname = path
      const env = serviceEnv({ DATABASE_URL: url.toString(), LOG_LEVEL: 'silent', PORT: String(await freePort()) })
      const run = spawnSync(...serviceCommand(), { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 })
      assert.equal(run.status, 1, run.stderr)
      const lines = run.stderr.trim().split('\n')
      assert.equal(lines.length, 1, run.stderr)
      assert.match(lines[0], new RegExp(`^start-up failed \\(PostgreSQL at ${url.hostname}:${url.port || 5432}/`))
      assert.match(lines[0], pattern)
      assert.doesNotMatch(run.stderr, /s3cret-pw/)
    })
  }

  test('the first request to a PostgreSQL that stopped accepting connections answers 503, not 500', { skip: NEEDS_PG }, async (t) => {
    const target = new URL(TEST_DATABASE_URL!)
    const proxy = await DatabaseProxy.start({ host: target.hostname, port: Number(target.port || 5432) })
    t.after(() => proxy.close())
    const service = await startService({ env: { DATABASE_URL: proxy.rewrite(TEST_DATABASE_URL!), SHUTDOWN_GRACE_MS: '0' } })
    t.after(() => service.stop())
    await proxy.set('refuse')
    for (const [method, path, body] of [['GET', '/v3/plant/1'], ['GET', '/v3/plant'], ['POST', '/v3/plant', { name: 'x' }], ['GET', '/readyz']] as const) {
      const res = await send(service.url, { method, path, body })
      assert.equal(res.status, 503, `${method} ${path}: ${res.body}`)
    }
  })
})
