import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build } from './helpers/app.js'
import { ENGINES } from './helpers/engines.js'

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
          assert.match(problem.detail, /^q terms must not hold control characters/)
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
