import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { QueryTooSlow } from '../../src/catalogue/errors.js'
import { testConfig } from '../../src/config.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { sqliteEngine } from '../helpers/engines.js'
import { overriding } from '../helpers/overriding.js'
import { tempDir } from '../helpers/process.js'

// An operator's review: a keyed client within its budget was answered query-too-slow after its
// search waited for the only reader thread, and told to "narrow it (a rarer tag, a longer q)"
// though it had neither; the OpenAPI document's 503 of a list or a count never named the code.

test('a read that waited for the only reader thread and then ran past its limit says how long it waited', async (t) => {
  const dir = tempDir('plants-too-slow')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000, readers: 1, searchRejectBudget: 1 })
  t.after(() => store.close())
  for (let i = 0; i < 5; i++) await store.create({ name: `Plant aaa ${i}`, category: null, tags: ['green'], status: 'available' })
  // Asked together, the second waits for the first to leave the thread; "aaaa" rejects every name its index suggests.
  const first = store.list({ afterId: 0, limit: 50, tags: ['green'] })
  const refused = await store.list({ afterId: 0, limit: 50, terms: ['aaaa'] }).then(() => undefined, (err: unknown) => err)
  await first
  assert.ok(refused instanceof QueryTooSlow, String(refused))
  assert.equal(typeof refused.waitedMs, 'number')
  assert.ok(refused.waitedMs! >= 0)
})

async function answered (t: test.TestContext, err: QueryTooSlow, url: string): Promise<string> {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig({}), { store: overriding(store, { list: async () => { throw err } }) })
  t.after(async () => { await app.close(); await store.close() })
  const res = await app.inject({ method: 'GET', url })
  assert.equal(res.statusCode, 503)
  assert.equal(res.json().type, '/v3/problems/query-too-slow')
  return res.json().detail as string
}

test('query-too-slow after a long wait for a reader says the readers were busy and to retry; it names only filters the request has', async (t) => {
  const detail = await answered(t, new QueryTooSlow('the query ran past its time limit of 2000 ms', 2500), '/v3/plant?category=x&sort=-price&limit=500')
  assert.match(detail, /after waiting 2500 ms for a reader thread \(the limit does not count the wait\)/)
  assert.match(detail, /every reader was busy \(SQLITE_READERS\).*retry shortly/)
  assert.match(detail, /\(a filter, a smaller limit\)/)
  assert.doesNotMatch(detail, /rarer tag|longer q/)
})

test('query-too-slow after no wait to speak of says the query itself is slow, and a search is told to narrow its tag or q', async (t) => {
  const detail = await answered(t, new QueryTooSlow('the query ran past its time limit of 2000 ms', 3), '/v3/plant?q=fern')
  assert.match(detail, /after waiting 3 ms for a reader thread.*: the query itself is slow; narrow it \(a rarer tag, a longer q\) or retry/)
})

test('/metrics counts the reads answered query-too-slow, by engine', async (t) => {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig({}), { store: overriding(store, { list: async () => { throw new QueryTooSlow('the query ran past its time limit of 2000 ms', 0) } }) })
  t.after(async () => { await app.close(); await store.close() })
  for (let i = 0; i < 2; i++) assert.equal((await app.inject({ method: 'GET', url: '/v3/plant?category=x' })).statusCode, 503)
  assert.match((await app.inject({ method: 'GET', url: '/metrics' })).body, /^query_too_slow_total\{engine="sqlite"\} 2$/m)
})

test('the OpenAPI 503 of a list and of a count names query-too-slow among its codes', async (t) => {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig({}), { store })
  t.after(async () => { await app.close(); await store.close() })
  await app.ready()
  const doc = app.openapiDocument() as { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> }
  for (const path of ['/v3/plant', '/v3/plant/count']) {
    const description = doc.paths[path].get.responses['503'].description
    for (const code of ['query-too-slow', 'storage-unavailable', 'shutting-down']) assert.match(description, new RegExp(code), `${path}: ${description}`)
  }
  assert.match(doc.paths['/v3/plant'].get.responses['503'].description, /send-queue-full/)
})
