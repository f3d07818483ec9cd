import { buildApp } from '/work/wt/query/src/app.ts'
import { testConfig } from '/work/wt/query/src/config.ts'
import { openSqliteStore } from '/work/wt/query/src/store/sqlite/sqlite-plant-store.ts'
import { openPostgresStore } from '/work/wt/query/src/store/postgres/postgres-plant-store.ts'
const store = process.argv[2] === 'pg' ? await openPostgresStore({ connectionString: 'postgres://postgres@127.0.0.1:5432/wt_query', feedRetentionMs: 1e9 }) : openSqliteStore({ dataDir: ':memory:', feedRetentionMs: 1e9 })
const app = await buildApp(testConfig({}), { store })
for (const name of ['Monstera deliciosa', 'Fern', 'Ficus', 'Café plant', 'MONSTER']) {
  const r = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name, tags: ['a', name.length > 4 ? 'long' : 'short'], status: name.startsWith('F') ? 'sold' : 'available' } })
  console.log(r.statusCode, r.body)
}
for (const url of ['/v3/plant?q=MONST', '/v3/plant?q=MONST%20era', '/v3/plant?q=st', '/v3/plant?sort=name&limit=2', '/v3/plant?sort=-name', '/v3/plant?status=sold&status=pending', '/v3/plant?tag=a&tag=long&sort=-id', '/v3/store/inventory', '/v3/plant?q=caf']) {
  const r = await app.inject({ method: 'GET', url })
  console.log(url, r.statusCode, r.body)
}
const p1 = await app.inject({ method: 'GET', url: '/v3/plant?sort=name&limit=2' })
const c = p1.json().nextCursor
console.log((await app.inject({ method: 'GET', url: `/v3/plant?sort=name&limit=2&cursor=${c}` })).body)
console.log((await app.inject({ method: 'GET', url: `/v3/plant?sort=-name&limit=2&cursor=${c}` })).body)
console.log((await app.inject({ method: 'PATCH', url: '/v3/plant/1', headers: { 'content-type': 'application/merge-patch+json' }, payload: '{"status":"sold","category":"big"}' })).body)
console.log((await app.inject({ method: 'PATCH', url: '/v3/plant/1', payload: {} })).body)
console.log((await app.inject({ method: 'PATCH', url: '/v3/plant/1', payload: { name: null } })).body)
console.log((await app.inject({ method: 'PATCH', url: '/v3/plant/x', payload: { name: null } })).body)
console.log((await app.inject({ method: 'PATCH', url: '/v3/plant/99', payload: {} })).body)
console.log((await app.inject({ method: 'GET', url: '/v3/store/inventory' })).body)
await app.close(); await store.close()
