import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { loadMigrations } from '../../src/store/postgres/migrate.js'
import { overriding } from '../helpers/overriding.js'
import { build } from '../helpers/app.js'
import { ENGINES, sqliteEngine } from '../helpers/engines.js'

// What is running: the release (package.json), the API version (the OpenAPI info) and the schema of its database.

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

for (const engine of ENGINES) {
  describe(`version (${engine.name})`, { skip: engine.skip }, () => {
    it('GET /v3/version names the release, the API version of the OpenAPI document and the schema version read from the database', async (t) => {
      const { app, request } = await build(t, engine)
      const doc = (await request({ method: 'GET', url: '/v3/openapi.json' })).json()
      const res = await request({ method: 'GET', url: '/v3/version' })
      assert.equal(res.statusCode, 200)
      const expectedSchema = engine.name === 'sqlite'
        ? await app.store.schemaVersion()
        : Math.max(...loadMigrations().map((m) => m.version))
      assert.deepEqual(res.json(), { version: pkg.version, apiVersion: doc.info.version, engine: engine.name, schemaVersion: expectedSchema })
      assert.ok(expectedSchema >= 1)
    })

    it('/metrics carries plant_catalogue_info with the release, API and schema versions as labels', async (t) => {
      const { app, request } = await build(t, engine)
      const metrics = (await request({ method: 'GET', url: '/metrics' })).body
      const schema = await app.store.schemaVersion()
      const doc = (await request({ method: 'GET', url: '/v3/openapi.json' })).json()
      assert.match(metrics, /# TYPE plant_catalogue_info gauge/)
      const line = metrics.split('\n').find((l: string) => l.startsWith('plant_catalogue_info{'))
      assert.equal(line, `plant_catalogue_info{version="${pkg.version}",api_version="${doc.info.version}",engine="${engine.name}",schema_version="${schema}"} 1`)
    })
  })
}

test('GET /v3/version answers at once from the last schema version read while the database hangs, and reads it again for the next', { timeout: 30_000 }, async (t) => {
  const store = await sqliteEngine.open()
  let hang: Promise<number> | undefined
  let reads = 0
  // A database that stops answering (PostgreSQL unreachable: each read waits for the connect timeout).
  const stalled = overriding(store, {
    schemaVersion: async () => { reads++; return await (hang ?? store.schemaVersion()) }
  })
  const app = await buildApp(testConfig(), { store: stalled })
  t.after(async () => { await app.close(); await store.close() })
  const before = (await app.inject({ method: 'GET', url: '/v3/version' })).json()
  let answer!: (value: number) => void
  await new Promise((resolve) => setImmediate(resolve)) // the read the first answer started is done
  const readsBefore = reads
  hang = new Promise((resolve) => { answer = resolve })
  // Were the answer to wait for the read, it would wait for ever and the test would time out.
  const during = await app.inject({ method: 'GET', url: '/v3/version' })
  assert.equal(during.statusCode, 200)
  assert.equal(during.json().schemaVersion, before.schemaVersion, 'the last value read')
  assert.equal((await app.inject({ method: 'GET', url: '/v3/version' })).statusCode, 200)
  assert.equal(reads, readsBefore + 1, 'one read in flight at a time, not one per request')
  // The database comes back with a newer schema (a newer release migrated it): the next call says so.
  hang = undefined
  answer(before.schemaVersion + 1)
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal((await app.inject({ method: 'GET', url: '/v3/version' })).json().schemaVersion, before.schemaVersion + 1)
})

test('GET /v3/version answers at once with schemaVersion null when the database has not been reachable since start', async (t) => {
  const store = await sqliteEngine.open()
  let reads = 0
  const unreachable = overriding(store, {
    schemaVersion: async () => { reads++; throw new Error('connect ECONNREFUSED 127.0.0.1:5432') }
  })
  const app = await buildApp(testConfig(), { store: unreachable })
  t.after(async () => { await app.close(); await store.close() })
  const res = await app.inject({ method: 'GET', url: '/v3/version' })
  assert.equal(res.statusCode, 200)
  assert.equal(res.json().schemaVersion, null)
  assert.ok(reads >= 1, 'start-up tried to read it')
})
