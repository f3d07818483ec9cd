import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { sqliteEngine } from '../helpers/engines.js'

// An operator's review: `?q=%ff` and `?category=%ff` answered 200 with no items, while the path's
// `/v3/plant/%ff` was refused 400.

test('a query parameter whose percent-encoding is not UTF-8, or malformed, is 400 invalid-input; a well-encoded one is read', async (t) => {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig({}), { store })
  t.after(async () => { await app.close(); await store.close() })
  await store.create({ name: 'Café fern', category: 'Ferns', tags: [], status: 'available' })
  for (const query of ['q=%ff', 'q=%E0%A4', 'category=%ff', 'tag=%C0%AF', 'q=%zz']) {
    const res = await app.inject({ method: 'GET', url: `/v3/plant?${query}` })
    assert.equal(res.statusCode, 400, query)
    assert.equal(res.json().type, '/v3/problems/invalid-input')
    assert.match(res.json().detail, /malformed percent-encoding, or one that is not UTF-8/)
    assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), [`/${query.split('=')[0]}`], 'names the parameter')
  }
  const found = await app.inject({ method: 'GET', url: '/v3/plant?q=caf%C3%A9' })
  assert.equal(found.statusCode, 200)
  assert.equal(found.json().items.length, 1)
})

test('the 400 names the parameter as sent when its name is malformed, decoded when only its value is', async (t) => {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig({}), { store })
  t.after(async () => { await app.close(); await store.close() })
  for (const [query, path] of [['%ff=1', '/%ff'], ['q%5Fx=%ff', '/q_x'], ['limit=5&q=a%20b&tag=%ff', '/tag'], ['q=a=%ff', '/q']]) {
    const res = await app.inject({ method: 'GET', url: `/v3/plant?${query}` })
    assert.equal(res.statusCode, 400, query)
    assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), [path], query)
  }
})
