import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { test } from 'node:test'
import Fastify from 'fastify'
import { pino, type Logger } from 'pino'
import { lazyRequestLoggers } from '../../src/http/logging/request-logger.js'

function capture (level: string): { logger: Logger, lines: () => any[] } {
  const chunks: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { chunks.push(String(chunk)); done() } })
  return { logger: pino({ level }, stream), lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l)) }
}

test('request loggers write only lines at or above the level, each with its request id and bindings', async (t) => {
  const { logger, lines } = capture('info')
  const app = Fastify({ loggerInstance: logger, childLoggerFactory: lazyRequestLoggers, disableRequestLogging: true })
  t.after(() => app.close())
  app.get('/', async (request) => {
    request.log.debug('below the level')
    request.log.warn({ detail: 1 }, 'at the level')
    request.log.child({ step: 'inner' }).error('from a grandchild')
    return { level: request.log.level, debug: request.log.isLevelEnabled('debug') }
  })
  const res = await app.inject({ method: 'GET', url: '/' })
  assert.deepEqual(res.json(), { level: 'info', debug: false })
  const written = lines().filter((l) => l.reqId !== undefined)
  assert.deepEqual(written.map((l) => l.msg), ['at the level', 'from a grandchild'])
  assert.ok(written.every((l) => l.reqId === written[0].reqId))
  assert.equal(written[0].detail, 1)
  assert.equal(written[1].step, 'inner')
})

test('a request logger raised to debug writes debug lines', async (t) => {
  const { logger, lines } = capture('info')
  const app = Fastify({ loggerInstance: logger, childLoggerFactory: lazyRequestLoggers, disableRequestLogging: true })
  t.after(() => app.close())
  app.get('/', { logLevel: 'debug' }, async (request) => {
    request.log.debug('now shown')
    return {}
  })
  await app.inject({ method: 'GET', url: '/' })
  assert.deepEqual(lines().filter((l) => l.reqId !== undefined).map((l) => l.msg), ['now shown'])
})
