import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { loadMigrations } from '../src/store/postgres/migrate.js'
import { build } from './helpers/app.js'
import { ENGINES } from './helpers/engines.js'

// What is running: the release (package.json), the API version (the OpenAPI info) and the schema of its database.

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }

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
