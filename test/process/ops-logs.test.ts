import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { StorageUnavailable } from '../../src/catalogue/errors.js'
import { overriding } from '../helpers/overriding.js'
import { sqliteEngine } from '../helpers/engines.js'
import { logCollector, parseLines } from '../helpers/log-lines.js'
import { TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { ROOT, startService } from '../helpers/process.js'

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
  test('one line per 4xx (info) or 5xx (error) answer with method, route, status, problem type, client (through TRUST_PROXY) and request id; none for successes or readiness', async (t) => {
    const store = await sqliteEngine.open()
    const broken = overriding(store, {
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
    assert.deepEqual(answers.map(({ level, reqId, method, route, status, type, client, msg }) => ({ level, reqId, method, route, status, type, client, msg })), [
      { level: 'info', reqId: 'missing-1', method: 'GET', route: '/v3/plant/:id', status: 404, type: '/v3/problems/not-found', client: '203.0.113.9', msg: 'request refused' },
      { level: 'info', reqId: 'nowhere-1', method: 'GET', route: 'unmatched', status: 404, type: '/v3/problems/route-not-found', client: '203.0.113.9', msg: 'request refused' },
      { level: 'error', reqId: 'bug-1', method: 'GET', route: '/v3/plant', status: 500, type: '/v3/problems/internal', client: '203.0.113.9', msg: 'request answered with an error' }
    ])
    assert.equal(lines.filter((l) => l.reqId === 'bug-1').length, 1, 'a 5xx is one line, with its error')
    assert.equal(answers[2].err.message, 'a bug')
    assert.ok(!lines.some((l) => l.reqId === 'ok-1'), 'a success is not logged at info')
    assert.ok(!lines.some((l) => l.reqId === 'probe-1' && l.msg !== 'readiness answers 503: shutting down'), 'probes are not in the access log')
    for (const line of lines) {
      assert.match(line.time, ISO, 'times are ISO 8601')
      assert.ok(['info', 'warn', 'error'].includes(line.level), `level names, not numbers: ${line.level}`)
    }
  })

  test('a 4xx is one info line with its problem type, detail and URL (keys redacted); a 5xx one error line with its cause, storage faults included', async (t) => {
    const store = await sqliteEngine.open()
    const down = overriding(store, {
      list: async () => { throw new StorageUnavailable('PostgreSQL is unreachable', new Error('connect ECONNREFUSED 10.0.0.3:5432')) }
    })
    const log = logCollector()
    const app = await buildApp(testConfig({ logLevel: 'info' }), { store: down, logStream: log.stream })
    t.after(async () => { await app.close(); await store.close() })
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/999?api_key=s3cret-key', headers: { 'x-request-id': 'refused-1' } })).statusCode, 401)
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant', headers: { 'x-request-id': 'down-1' } })).statusCode, 503)

    const lines = log.lines()
    const refused = lines.filter((l) => l.reqId === 'refused-1')
    assert.equal(refused.length, 1, 'one line for a refusal')
    assert.equal(refused[0].level, 'info')
    assert.equal(refused[0].type, '/v3/problems/unauthorized')
    assert.match(refused[0].detail, /api_key/)
    assert.equal(refused[0].url, '/v3/plant/999?api_key=[redacted]')
    assert.doesNotMatch(JSON.stringify(lines), /s3cret-key/, 'the key never reaches the log')

    const failed = lines.filter((l) => l.reqId === 'down-1')
    assert.equal(failed.length, 1, `one line for a 5xx: ${JSON.stringify(failed)}`)
    assert.equal(failed[0].level, 'error')
    assert.equal(failed[0].msg, 'request answered with an error')
    assert.equal(failed[0].status, 503)
    assert.equal(failed[0].type, '/v3/problems/storage-unavailable')
    assert.match(failed[0].err.message, /ECONNREFUSED/, 'the line carries the cause')
    assert.ok(failed[0].err.stack, 'with its stack')
  })

  test('the start-up line names the engine, the data folder, auth mode, rate limit and version', async (t) => {
    const service = await startService({ env: { LOG_LEVEL: 'info', API_KEYS: 'till-key-0123456789,shop-key-0123456789', RATE_LIMIT: '120', TRUST_PROXY: '10.0.0.0/8' } })
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
    assert.doesNotMatch(service.output(), /till-key|shop-key/, 'keys are never logged')
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
