import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { serializersCompiled } from '../../src/http/schemas/lazy-schemas.js'
import { validatorsCompiled } from '../../src/http/input/validation.js'
import { sqliteEngine } from '../helpers/engines.js'

// Validators, serialisers and the OpenAPI document are compiled once a process: a second app of
// the same routes (each test builds one; so does each worker of a cluster) compiles none of them again.

test('a second app in one process compiles no validator, serialiser or OpenAPI document the first compiled', async (t) => {
  const apps = []
  for (const config of [testConfig(), testConfig({ apiKeys: ['a-key-for-the-second-app'], rateLimit: 100 })]) {
    const store = await sqliteEngine.open()
    const app = await buildApp(config, { store })
    t.after(async () => { await app.close(); await store.close() })
    await app.ready()
    await app.lazySchemas.compileRest()
    apps.push(app)
    if (apps.length === 1) {
      assert.ok(validatorsCompiled() > 20 && serializersCompiled() > 20, `${validatorsCompiled()} validators, ${serializersCompiled()} serialisers`)
    }
  }
  const [first, second] = apps
  const counts = [validatorsCompiled(), serializersCompiled()]
  // Compiled again through every route of the second app: nothing new.
  await second.lazySchemas.compileRest()
  assert.deepEqual([validatorsCompiled(), serializersCompiled()], counts)
  assert.equal(second.lazySchemas.pending, 0)
  assert.equal(second.openapiDocument(), first.openapiDocument())
  // The second app answers as the first: its validators and serialisers work.
  const created = await second.inject({ method: 'POST', url: '/v3/plant', headers: { authorization: 'Bearer a-key-for-the-second-app' }, payload: { name: 'Fern', tags: ['x'] } })
  assert.equal(created.statusCode, 200, created.body)
  const refused = await second.inject({ method: 'POST', url: '/v3/plant', headers: { authorization: 'Bearer a-key-for-the-second-app' }, payload: { name: 7 } })
  assert.equal(refused.statusCode, 405)
  assert.equal(refused.json().errors[0].path, '/name')
})
