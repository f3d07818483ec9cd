import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// A search term is what a person types: control characters in `q` are refused (400 naming the
// rule) on both engines, before either sees them (a NUL was a 500 with a stack trace on SQLite).

for (const engine of ENGINES) {
  describe(`q with control characters on ${engine.name}`, { skip: engine.skip }, () => {
    test('is refused 400 invalid-input naming the rule, on the list and the count; white space still separates terms', async (t) => {
      const { request, add } = await build(t, engine)
      await add({ name: 'Monstera deliciosa' })
      for (const q of ['%00%00%00', 'mon%00', 'ab%01c', '%7F%7F%7F', '%C2%85del', 'monstera%20%1Bdel']) {
        for (const path of ['/v3/plant', '/v3/plant/count']) {
          const res = await request({ method: 'GET', url: `${path}?q=${q}` })
          assert.equal(res.statusCode, 400, `${path}?q=${q}: ${res.body}`)
          const problem = res.json()
          assert.match(problem.type, /invalid-input$/)
          assert.match(problem.detail, /^querystring \/q terms must not hold control characters/)
          assert.deepEqual(problem.errors.map((e: { path: string }) => e.path), ['/q'])
        }
      }
      // Tab and line feed are control characters too, but white space: they separate terms as a space does.
      const found = await request({ method: 'GET', url: '/v3/plant?q=mon%09DEL%0Aosa' })
      assert.equal(found.statusCode, 200)
      assert.deepEqual(found.json().items.map((p: { name: string }) => p.name), ['Monstera deliciosa'])
    })
  })
}

// An adversarial q on SQLite: a term whose trigrams are all common while the term itself
// is in few names makes the trigram index's candidates false matches, each a row read and a check.
// Bounded by count, not time: a search rejects at most searchRejectBudget names (lowered here to 150,
// above the index's backlog of 128 names, which a search checks beside the index).
describe('q whose index candidates are false matches, on SQLite', () => {
  const DAY = 86_400_000
  const storeOf = async (t: TestContext, names: string[]) => {
    const store = openSqliteStore({ dataDir: ':memory:', feedRetentionMs: DAY, searchRejectBudget: 150 })
    for (const name of names) await store.create({ name, category: null, tags: [], status: 'available' })
    const app = await buildApp(testConfig({}), { store })
    t.after(async () => { await app.close(); await store.close() })
    return async (url: string) => await app.inject({ method: 'GET', url })
  }

  test('a periodic term ("potpotpot") searches by its every distinct trigram: "otp" is in no name of "Pot 0"…"Pot 499", so none is read from the index and rejected', async (t) => {
    const get = await storeOf(t, Array.from({ length: 500 }, (_, i) => `Pot ${i}`))
    // By "pot" alone, every name would be rejected: past the budget, a 503.
    const res = await get('/v3/plant?q=potpotpot')
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json().items, [])
    assert.equal((await get('/v3/plant?q=pot&limit=100')).json().items.length, 100)
  })

  test('past the budget of rejected names the list and the count answer 503 query-too-slow; below it, as usual', async (t) => {
    // Each name holds pot, otp and tpo, never "potpotpot".
    const get = await storeOf(t, [...Array.from({ length: 400 }, (_, i) => `pot otp tpo ${i}`), 'potpotpot'])
    for (const path of ['/v3/plant', '/v3/plant/count']) {
      const res = await get(`${path}?q=potpotpot`)
      assert.equal(res.statusCode, 503, res.body)
      assert.match(res.json().type, /query-too-slow$/)
      assert.match(res.json().detail, /rejected more than 150 names/)
    }
    // A narrower search rejects fewer and is answered.
    const narrow = await get('/v3/plant?q=potpotpot%20tpo%2011')
    assert.equal(narrow.statusCode, 200, narrow.body)
    assert.deepEqual(narrow.json().items, [])
    assert.deepEqual((await get('/v3/plant?q=otp%20tpo%20399')).json().items.map((p: { name: string }) => p.name), ['pot otp tpo 399'])
  })
})
