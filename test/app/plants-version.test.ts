import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { recordOfChange } from '../../src/catalogue/changes.js'
import { testConfig } from '../../src/config.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// The record carries `version`, the number its ETag names, wherever a plant is sent: a list page
// gives a client what If-Match and a batch's ifMatch need without a GET per plant. It is the
// service's to set: a body that holds it is refused as a read-only member.

const versionOf = (etag: string | string[] | undefined): number => Number(/^"\d+\.(\d+)"$/.exec(String(etag))![1])

async function changesAfter (app: TestApp, after: number): Promise<Array<Record<string, any>>> {
  const res = await app.request({ method: 'GET', url: `/v3/plant/changes?after=${after}` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().items
}

for (const engine of ENGINES) {
  describe(`the record's version (${engine.name})`, { skip: engine.skip }, () => {
    test('every answer that sends a plant carries the version its ETag names: POST, GET, list, PUT, PATCH, photo order, batch, the 412\'s current plant and the feed', async (t) => {
      const app = await build(t, engine)
      const created = await app.request({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } })
      const plant = created.json()
      assert.equal(plant.version, 1)
      assert.equal(versionOf(created.headers.etag), 1)
      const id = plant.id

      const put = await app.request({ method: 'PUT', url: '/v3/plant', payload: { id, name: 'Monstera deliciosa' } })
      assert.equal(put.json().version, 2)
      assert.equal(versionOf(put.headers.etag), 2)
      const patched = await app.request({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { status: 'sold' } })
      assert.equal(patched.json().version, 3)
      assert.equal(versionOf(patched.headers.etag), 3)
      // {} writes nothing: the version stays.
      assert.equal((await app.request({ method: 'PATCH', url: `/v3/plant/${id}`, payload: {} })).json().version, 3)

      const read = await app.request({ method: 'GET', url: `/v3/plant/${id}` })
      assert.equal(read.json().version, 3)
      assert.equal(versionOf(read.headers.etag), 3)
      const other = await app.add({ name: 'Fern' })
      const page = (await app.request({ method: 'GET', url: '/v3/plant?sort=name' })).json().items
      assert.deepEqual(page.map((p: { id: number, version: number }) => [p.id, p.version]), [[other.id, 1], [id, 3]])

      // A list page is enough for a batch's ifMatch: no GET per plant.
      const batch = await app.request({
        method: 'POST',
        url: '/v3/plant/batch',
        payload: { operations: page.map((p: { id: number, version: number }) => ({ op: 'patch', id: p.id, patch: { status: 'pending' }, ifMatch: `"${p.id}.${p.version}"` })) }
      })
      assert.equal(batch.statusCode, 200, batch.body)
      for (const result of batch.json().results) {
        assert.equal(result.status, 200)
        assert.equal(result.plant.version, versionOf(result.etag))
      }
      assert.deepEqual(batch.json().results.map((r: { plant: { version: number } }) => r.plant.version), [2, 4])

      // A stale If-Match: the 412 hands back the plant as it is now, its version with it.
      const stale = await app.request({ method: 'PUT', url: '/v3/plant', payload: { id, name: 'Old' }, headers: { 'if-match': `"${id}.1"` } })
      assert.equal(stale.statusCode, 412)
      assert.equal(stale.json().current.version, 4)

      const changes = await changesAfter(app, 0)
      assert.deepEqual(changes.map((c) => [c.kind, c.id, c.version, c.plant?.version]),
        [['created', id, 1, 1], ['updated', id, 2, 2], ['updated', id, 3, 3], ['created', other.id, 1, 1], ['updated', other.id, 2, 2], ['updated', id, 4, 4]])
    })

    test('a version in a POST, PUT, PATCH or batch body is refused as read-only (400, naming it, pointing to If-Match), and nothing is written', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera' })
      const refusals = [
        await app.request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern', version: 1 } }),
        await app.request({ method: 'PUT', url: '/v3/plant', payload: { ...plant, photos: undefined, createdAt: undefined, updatedAt: undefined } }),
        await app.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { name: 'Fern', version: 1 } })
      ]
      for (const res of refusals) {
        // POST's other invalid input is 405 (the seed's); a read-only member is 400 on every write.
        assert.equal(res.statusCode, 400, res.body)
        assert.equal(res.json().type.endsWith('/invalid-input'), true)
        const error = res.json().errors.find((e: { path: string }) => e.path === '/version')
        assert.match(error.message, /^is read-only: the service sets the version; .*If-Match/)
      }
      const batch = await app.request({ method: 'POST', url: '/v3/plant/batch', payload: { operations: [{ op: 'patch', id: plant.id, patch: { name: 'Fern', version: 1 } }] } })
      assert.equal(batch.statusCode, 400)
      assert.deepEqual(batch.json().errors.map((e: { path: string }) => e.path), ['/operations/0/patch/version'])
      assert.match(batch.json().errors[0].message, /^is read-only/)
      assert.deepEqual((await app.request({ method: 'GET', url: '/v3/plant' })).json().items, [plant])
    })

    test('the trash lists a plant with the version it was deleted at, one below the entry\'s; a restore answers the new version', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera' })
      await app.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' } })
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })).statusCode, 204)
      const [entry] = (await app.request({ method: 'GET', url: '/v3/trash' })).json().items
      assert.deepEqual([entry.version, entry.plant.version], [3, 2])
      const restored = await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore`, headers: { 'if-match': `"${plant.id}.${entry.version}"` } })
      assert.equal(restored.statusCode, 200, restored.body)
      assert.equal(restored.json().version, 4)
      assert.equal(versionOf(restored.headers.etag), 4)
    })
  })
}

test('a change kept before the record carried a version is given its change\'s version', () => {
  const record = recordOfChange('{"id":7,"name":"Fern"}', 3)
  assert.deepEqual([record?.id, record?.name, record?.version], [7, 'Fern', 3])
  // Kept before the record carried stock: not tracked.
  assert.deepEqual([record?.stock, record?.lowStockAt], [null, null])
  assert.equal(recordOfChange(null, 4), null)
})

/** Adds a plant and changes it, then takes `version` out of every change's record, as records were kept before it. */
async function feedWithOldRecords (store: PlantStore, strip: () => Promise<void>): Promise<Array<Record<string, any>>> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const { id } = (await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } })).json()
    await app.inject({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { status: 'sold' } })
    await strip()
    return (await app.inject({ method: 'GET', url: '/v3/plant/changes?after=0' })).json().items
  } finally {
    await app.close()
  }
}

test('SQLite: the feed\'s records written before the record carried a version are served with their change\'s', async (t) => {
  const dir = tempDir('plants-version-feed')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  t.after(() => store.close())
  const items = await feedWithOldRecords(store, async () => {
    const db = connect(`${dir.path}/catalogue.db`)
    try {
      assert.equal(db.prepare("UPDATE changes SET plant = json_remove(plant, '$.version') WHERE plant IS NOT NULL").run().changes, 2)
    } finally {
      db.close()
    }
  })
  assert.deepEqual(items.map((c) => [c.version, c.plant.version]), [[1, 1], [2, 2]])
})

test('PostgreSQL: the feed\'s records written before the record carried a version are served with their change\'s', { skip: postgresEngine.skip }, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, startWaitMs: 60_000 })
  t.after(() => store.close())
  const items = await feedWithOldRecords(store, async () => {
    await adminQuery(`UPDATE ${scratch.name}.changes SET plant = (plant::jsonb - 'version')::text WHERE plant IS NOT NULL`)
    const [{ n }] = await adminQuery(`SELECT count(*)::int AS n FROM ${scratch.name}.changes WHERE plant LIKE '%"version"%'`)
    assert.equal(n, 0)
  })
  assert.deepEqual(items.map((c) => [c.version, c.plant.version]), [[1, 1], [2, 2]])
})
