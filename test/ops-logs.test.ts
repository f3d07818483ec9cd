import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { buildApp } from '../src/app.js'
import { testConfig } from '../src/config.js'
import { sqliteEngine } from './helpers/engines.js'
import { logCollector, parseLines } from './helpers/log-lines.js'
import { TEST_DATABASE_URL } from './helpers/postgres-engine.js'
import { ROOT, startService } from './helpers/process.js'

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const VERSION = (JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { version: string }).version

/**
 * The start-up line, once it has arrived: /healthz can answer (which is when startService returns)
 * before pino's asynchronous write of the line reaches the pipe, as a loaded CI run showed.
 */
async function startLine (service: { output (): string }): Promise<Record<string, any> | undefined> {
  for (let waited = 0; waited < 5_000; waited += 50) {
    const line = parseLines(service.output()).find((l) => l.msg === 'plant catalogue started')
    if (line) return line
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return undefined
}

describe('logs an operator can use', () => {
  test('at info: one line per 4xx/5xx answer with method, route, status, client (through TRUST_PROXY) and request id; none for successes or readiness', async (t) => {
    const store = await sqliteEngine.open()
    const broken = Object.assign(Object.create(store), {
      list: async () => { throw new Error('a bug') }
    })
    const log = logCollector()
    const app = await buildApp(testConfig({ logLevel: 'info', trustProxy: ['127.0.0.1'] }), { store: broken, logStream: log.stream })
    t.after(async () => { await app.close(); await store.close() })
    const from = (id: string): Record<string, string> => ({ 'x-request-id': id, 'x-forwarded-for': '198.51.100.7, 203.0.113.9' })
    assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'ok' }, headers: from('ok-1') })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/999', headers: from('missing-1') })).statusCode, 404)
    assert.equal((await app.inject({ method: 'GET', url: '/no/such/thing', headers: from('nowhere-1') })).statusCode, 404)
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant', headers: from('bug-1') })).statusCode, 500)
    app.readiness.draining = true
    assert.equal((await app.inject({ method: 'GET', url: '/readyz', headers: from('probe-1') })).statusCode, 503)

    const lines = log.lines()
    const answers = lines.filter((l) => l.msg === 'request refused' || l.msg === 'request answered with an error')
    assert.deepEqual(answers.map(({ level, reqId, method, route, status, client, msg }) => ({ level, reqId, method, route, status, client, msg })), [
      { level: 'info', reqId: 'missing-1', method: 'GET', route: '/v3/plant/:id', status: 404, client: '203.0.113.9', msg: 'request refused' },
      { level: 'info', reqId: 'nowhere-1', method: 'GET', route: 'unmatched', status: 404, client: '203.0.113.9', msg: 'request refused' },
      { level: 'info', reqId: 'bug-1', method: 'GET', route: '/v3/plant', status: 500, client: '203.0.113.9', msg: 'request answered with an error' }
    ])
    assert.ok(!lines.some((l) => l.reqId === 'ok-1'), 'a success is not logged at info')
    assert.ok(!lines.some((l) => l.reqId === 'probe-1' && l.msg !== 'readiness answers 503: shutting down'), 'probes are not in the access log')
    for (const line of lines) {
      assert.match(line.time, ISO, 'times are ISO 8601')
      assert.ok(['info', 'warn', 'error'].includes(line.level), `level names, not numbers: ${line.level}`)
    }
  })

  test('the start-up line names the engine, the data folder, auth mode, rate limit and version', async (t) => {
    const service = await startService({ env: { LOG_LEVEL: 'info', API_KEYS: 'k1,k2', RATE_LIMIT: '120', TRUST_PROXY: '10.0.0.0/8' } })
    t.after(() => service.stop())
    const line = await startLine(service)
    assert.ok(line, service.output())
    assert.equal(line.level, 'info')
    assert.match(line.time, ISO)
    assert.equal(line.version, VERSION)
    assert.equal(line.engine, 'sqlite')
    assert.equal(line.dataDir, service.dataDir)
    assert.equal(line.auth, 'API keys (2) for writes and /metrics')
    assert.equal(line.rateLimit, '120 a minute per client')
    assert.equal(line.trustProxy, '10.0.0.0/8')
    assert.doesNotMatch(service.output(), /k1|k2/, 'keys are never logged')
  })

  test('on PostgreSQL the start-up line names the host and database, never the password', { skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set' }, async (t) => {
    const url = new URL(TEST_DATABASE_URL!)
    url.password = 's3cret-pw' // trust authentication ignores it; it must still never be written
    const service = await startService({ env: { LOG_LEVEL: 'info', DATABASE_URL: url.toString() } })
    t.after(() => service.stop())
    const line = await startLine(service)
    assert.ok(line, service.output())
    assert.equal(line.engine, 'postgres')
    assert.equal(line.database, `${url.hostname}:${url.port || 5432}${url.pathname}`)
    assert.equal(line.dataDir, undefined)
    assert.equal(line.auth, 'none: anonymous writes on loopback only')
    assert.equal(line.rateLimit, 'off')
    assert.doesNotMatch(service.output(), /s3cret-pw/)
  })
})
