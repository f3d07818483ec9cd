import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { logCollector, type LogLine } from '../helpers/log-lines.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// The hourly retention purge (the change feed, idempotency keys, the trash and history past their
// retention) runs on a timer: a failure there must reach the service's log, and must neither end the
// process (a throw from a timer would) nor stop the next hour's purge.

const HOUR = 3_600_000

/** A promise of the next error `onPurgeError` is given, and the callback to give the store. */
function purgeErrors (): { next: () => Promise<unknown>, onPurgeError: (err: unknown) => void, seen: unknown[] } {
  const seen: unknown[] = []
  let waiting: ((err: unknown) => void) | undefined
  return {
    seen,
    next: () => new Promise((resolve) => { waiting = resolve }),
    onPurgeError: (err) => { seen.push(err); waiting?.(err) }
  }
}

test('sqlite: a failed hourly purge is logged as an error, not thrown from its timer, and the next hour tries again', { timeout: 30_000 }, async (t) => {
  const dir = tempDir('purge-errors')
  t.after(() => dir.remove())
  t.mock.timers.enable({ apis: ['setInterval'] })
  const log = logCollector()
  const app = await buildApp(testConfig({ dataDir: dir.path, sqliteReaders: 0, logLevel: 'info' }), { logStream: log.stream })
  t.after(() => app.close())
  const failures = (): LogLine[] => log.lines().filter((l) => /retention purge failed/.test(l.msg))
  assert.deepEqual(failures(), [], 'the purge at opening worked')

  // Another connection takes a table the purge deletes from away (as a failing disk would fail it).
  const other = new Database(join(dir.path, 'catalogue.db'))
  t.after(() => other.close())
  other.exec('ALTER TABLE idempotency_keys RENAME TO keys_away')
  for (const hour of [1, 2]) {
    t.mock.timers.tick(HOUR)
    assert.equal(failures().length, hour, `hour ${hour}: the failure is logged`)
  }
  assert.equal(failures()[0].level, 'error')
  assert.match(failures()[0].err.message, /idempotency_keys/)
  other.exec('ALTER TABLE keys_away RENAME TO idempotency_keys')
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the service goes on')
})

test('postgres: a failed hourly purge is told, and the next hour tries again', { skip: postgresEngine.skip, timeout: 30_000 }, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  t.mock.timers.enable({ apis: ['setInterval'] })
  const errors = purgeErrors()
  const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: HOUR, pollIntervalMs: HOUR, onPurgeError: errors.onPurgeError })
  t.after(() => store.close())
  assert.deepEqual(errors.seen, [], 'the purge at opening worked')

  await adminQuery(`ALTER TABLE ${scratch.name}.idempotency_keys RENAME TO keys_away`)
  for (const hour of [1, 2]) {
    const failed = errors.next()
    t.mock.timers.tick(HOUR)
    assert.match(String(await failed), /idempotency_keys/, `hour ${hour}: the failure is told`)
  }
  assert.equal(errors.seen.length, 2, 'each hour tried again')
  await adminQuery(`ALTER TABLE ${scratch.name}.keys_away RENAME TO idempotency_keys`)
})
