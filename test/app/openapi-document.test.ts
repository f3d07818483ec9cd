import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig, type Config } from '../../src/config.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'

async function documentWith (config: Partial<Config>): Promise<Record<string, any>> {
  const store = openSqliteStore({ dataDir: ':memory:', feedRetentionMs: 86_400_000 })
  const app = await buildApp(testConfig(config), { store })
  try {
    return (await app.inject({ method: 'GET', url: '/v3/openapi.json' })).json()
  } finally {
    await app.close()
    await store.close()
  }
}

const NAMED = ['Plant', 'NewPlant', 'PlantUpdate', 'PlantPatch', 'PlantPage', 'Inventory', 'Change', 'ChangePage', 'Problem', 'ApiIndex', 'Photo', 'Version', 'HistoryPage', 'RevertBody']
const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'patch']

test('the OpenAPI document is the same whatever the settings: keys, READS, a rate limit, CORS, both or none', async () => {
  const plain = await documentWith({})
  for (const config of [{ apiKeys: ['k'] }, { readsNeedKey: true }, { rateLimit: 10 }, { apiKeys: ['k'], rateLimit: 10, corsOrigins: ['https://shop.example'] }]) {
    assert.deepEqual(await documentWith(config), plain, JSON.stringify(config))
  }
  // …and it says when the guards apply, rather than leaving them out.
  assert.deepEqual(Object.keys(plain.components.securitySchemes).sort(), ['apiKeyHeader', 'bearerAuth'])
  assert.match(plain.paths['/v3/plant'].post.responses['401'].description, /only when the service has keys/)
  assert.match(plain.paths['/v3/plant'].get.responses['429'].description, /when a rate limit is set/)
  // Every operation a rate limit counts declares its 429 (the webhook routes once did not); the probes are exempt.
  for (const [path, item] of Object.entries(plain.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>)) {
    if (path === '/healthz' || path === '/readyz') continue
    for (const method of OPERATION_METHODS) if (item[method] !== undefined) assert.ok(item[method].responses['429'], `${method} ${path} declares 429`)
  }
})

test('the document names its schemas in components.schemas and the operations reference them', async () => {
  const doc = await documentWith({})
  const schemas = doc.components.schemas as Record<string, unknown>
  for (const name of NAMED) assert.ok(schemas[name], `components.schemas.${name}`)
  assert.deepEqual(Object.keys(schemas).filter((name) => /^def-\d+$/.test(name)), [], 'no anonymous def-N names')
  const paths = JSON.stringify(doc.paths)
  const everything = JSON.stringify(doc)
  for (const name of NAMED) {
    const pointer = `"#/components/schemas/${name}"`
    assert.ok(everything.split(pointer).length > 1, `${name} is referenced`)
  }
  for (const name of NAMED.filter((n) => n !== 'Change' && n !== 'Photo')) {
    assert.ok(paths.includes(`"#/components/schemas/${name}"`), `an operation references ${name}`)
  }
  const post = doc.paths['/v3/plant'].post
  assert.deepEqual(post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NewPlant' })
  assert.deepEqual(post.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Plant' })
  assert.deepEqual(post.responses['405'].content['application/json'].schema, { $ref: '#/components/schemas/Problem' })
  assert.deepEqual((schemas.PlantPage as any).properties.items, { type: 'array', items: { $ref: '#/components/schemas/Plant' } })
})

test('every 200 of the document has a description of its own and declares X-Request-Id', async () => {
  const doc = await documentWith({})
  let seen = 0
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, operation] of Object.entries(item).filter(([m]) => OPERATION_METHODS.includes(m))) {
      const ok = operation.responses['200']
      if (!ok) continue
      seen++
      assert.ok(ok.description && ok.description !== 'Default Response', `${method} ${path}: 200 is described`)
      assert.ok(ok.headers?.['x-request-id'], `${method} ${path}: 200 declares x-request-id`)
    }
  }
  assert.ok(seen >= 8)
})

test('named schemas still validate requests and shape responses: the stored record, never more', async (t) => {
  const { request, add } = await build(t, sqliteEngine)
  const plant = await add({ name: 'Fern', tags: ['green'] })
  assert.deepEqual(Object.keys(plant).sort(), ['barcode', 'category', 'createdAt', 'description', 'id', 'lowStockAt', 'name', 'photos', 'price', 'sku', 'status', 'stock', 'tags', 'updatedAt', 'version'])
  const refused = await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Fern', colour: 'green' } })
  assert.deepEqual(refused.json().errors, [{ path: '/colour', message: 'is not a known field' }])
  const page = await request({ method: 'GET', url: '/v3/plant' })
  assert.deepEqual(page.json(), { items: [plant], nextCursor: null })
  const changes = await request({ method: 'GET', url: '/v3/plant/changes' })
  assert.deepEqual(changes.json().items[0].plant, plant)
})

test('GET /v3 answers 200 with where the docs page, the OpenAPI document and the API are, and each link answers', async (t) => {
  const { request } = await build(t, sqliteEngine)
  const res = await request({ method: 'GET', url: '/v3' })
  assert.equal(res.statusCode, 200)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const index = res.json()
  assert.deepEqual(index, {
    title: 'Plant catalogue',
    version: '1.0.0',
    docs: '/v3/docs',
    openapi: '/v3/openapi.json',
    plants: '/v3/plant',
    changes: '/v3/plant/changes',
    events: '/v3/plant/events',
    inventory: '/v3/store/inventory',
    release: '/v3/version',
    currency: 'EUR'
  })
  const docs = await request({ method: 'GET', url: index.docs })
  assert.ok([200, 302].includes(docs.statusCode), `docs answers ${docs.statusCode}`)
  assert.equal((await request({ method: 'GET', url: index.openapi })).json().info.version, index.version)
  assert.equal((await request({ method: 'GET', url: index.plants })).statusCode, 200)
  assert.equal((await request({ method: 'GET', url: index.changes })).statusCode, 200)
  assert.equal((await request({ method: 'GET', url: index.inventory })).statusCode, 200)
  assert.equal((await request({ method: 'GET', url: index.release })).json().apiVersion, index.version)
  const post = await request({ method: 'POST', url: '/v3', payload: {} })
  assert.equal(post.statusCode, 405)
  assert.equal(post.headers.allow, 'GET, HEAD')
})

test('the document\'s webhooks (OpenAPI 3.1) describe what a receiver is sent: the Change, a StockEvent or the test body, and the signed headers', async () => {
  const doc = await documentWith({})
  assert.equal(doc.openapi, '3.1.0')
  assert.deepEqual(Object.keys(doc.webhooks).sort(), ['change', 'stock', 'test'])
  const change = doc.webhooks.change.post
  assert.deepEqual(change.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/Change' })
  assert.deepEqual(doc.webhooks.test.post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/WebhookTest' })
  assert.ok(doc.components.schemas.WebhookTest, 'the test body is a named schema')
  assert.deepEqual(doc.webhooks.stock.post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/StockEvent' })
  assert.deepEqual(doc.components.schemas.StockEvent.properties.kind.enum, ['stock.low', 'stock.out'])
  assert.deepEqual(change.parameters.map((p: { name: string, in: string, required: boolean }) => `${p.in} ${p.name} ${p.required}`),
    ['header webhook-id true', 'header webhook-timestamp true', 'header webhook-signature true', 'header user-agent true'])
  assert.match(change.responses['2XX'].description, /within 10 s/)
  assert.match(change.responses.default.description, /same webhook-id/)
})
