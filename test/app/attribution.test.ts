import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { createKey } from '../../src/keys/manage.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { plants } from '../../scripts/lib/cli-harness.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { picture } from '../helpers/pictures.js'

// Attribution: every change in the feed says who made it (the key's name, `anonymous`
// without one, `cli` for the command line) and when.

const ENV_KEY = 'env-admin-key-0123456789'

/** Every change after `after`, through the feed's HTTP route. */
async function changesAfter (app: TestApp, after: number, headers: Record<string, string> = {}): Promise<Array<Record<string, any>>> {
  const res = await app.request({ method: 'GET', url: `/v3/plant/changes?after=${after}&limit=1000`, headers })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().items
}

/** Every kind of write, through HTTP with `headers`; how many changes they make. */
async function everyWrite (app: TestApp, headers: Record<string, string>): Promise<number> {
  const ok = async (options: Parameters<TestApp['request']>[0], status = 200): Promise<Record<string, any>> => {
    const res = await app.request({ ...options, headers: { ...options.headers, ...headers } })
    assert.equal(res.statusCode, status, `${options.method} ${options.url}: ${res.body}`)
    return res.statusCode === 204 ? {} : res.json()
  }
  const plant = await ok({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } }) // created
  await ok({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Monstera deliciosa' } }) // updated
  await ok({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' } }) // updated
  const one = await ok({ method: 'POST', url: `/v3/plant/${plant.id}/photos`, payload: await picture('png', 1), headers: { 'content-type': 'image/png' } }, 201)
  const two = await ok({ method: 'POST', url: `/v3/plant/${plant.id}/photos`, payload: await picture('png', 2), headers: { 'content-type': 'image/png' } }, 201)
  await ok({ method: 'PUT', url: `/v3/plant/${plant.id}/photos/order`, payload: { order: [two.id, one.id] } })
  await ok({ method: 'DELETE', url: `/v3/plant/${plant.id}/photos/${one.id}` }, 204)
  await ok({ method: 'POST', url: '/v3/plant/batch', payload: { operations: [{ op: 'create', plant: { name: 'Aloe' } }, { op: 'patch', id: plant.id, patch: { name: 'M' } }] } })
  await ok({ method: 'DELETE', url: `/v3/plant/${plant.id}` }, 204) // deleted
  return 10
}

for (const engine of ENGINES) {
  describe(`attribution (${engine.name})`, { skip: engine.skip }, () => {
    test('with a named key, every change kind (created, updated, deleted, photos, batch) names the key and its time', async (t) => {
      const app = await build(t, engine, { apiKeys: [ENV_KEY] })
      const { secret } = await createKey(app.app.store.keys, 'till-3', 'write', null, Date.now())
      const before = Date.now()
      const n = await everyWrite(app, { authorization: `Bearer ${secret}` })
      const after = Date.now()
      const changes = await changesAfter(app, 0)
      assert.equal(changes.length, n)
      assert.deepEqual(new Set(changes.map((c) => c.kind)), new Set(['created', 'updated', 'deleted']))
      for (const change of changes) {
        assert.equal(change.actor, 'till-3', JSON.stringify(change))
        assert.match(change.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        const at = Date.parse(change.at)
        assert.ok(at >= before - 1 && at <= after + 1, `${change.at} is within the writes`)
      }
      // A change's time is its write's: a record's updatedAt is the time of the change that made it.
      for (const change of changes) if (change.plant !== null) assert.equal(change.at, change.plant.updatedAt)
    })

    test('an API_KEYS key is env-1; without keys every change is anonymous', async (t) => {
      const keyed = await build(t, engine, { apiKeys: ['other-key-0123456789', ENV_KEY] })
      await everyWrite(keyed, { authorization: `Bearer ${ENV_KEY}` })
      assert.deepEqual(new Set((await changesAfter(keyed, 0)).map((c) => c.actor)), new Set(['env-2']))

      const open = await build(t, engine)
      await everyWrite(open, {})
      assert.deepEqual(new Set((await changesAfter(open, 0)).map((c) => c.actor)), new Set(['anonymous']))
    })

    test('the store records the actor it is given, and anonymous when none is', async (t) => {
      const { app } = await build(t, engine)
      const store = app.store
      const { plant } = await store.create({ name: 'a', category: null, tags: [], status: 'available' }, undefined, { actor: 'till-1' })
      await store.patch(plant.id, { status: 'sold' })
      await store.update(plant.id, { name: 'b', category: null, tags: [], status: 'sold' }, undefined, { actor: 'shop' })
      await store.batch([{ op: 'delete', id: plant.id }], undefined, { actor: 'sync' })
      assert.deepEqual((await store.changes(0, 10)).items.map((c) => [c.kind, c.actor]),
        [['created', 'till-1'], ['updated', 'anonymous'], ['updated', 'shop'], ['deleted', 'sync']])
    })

    test('the event stream sends the actor and time with each change', async (t) => {
      const app = await build(t, engine)
      await app.add({ name: 'Monstera' })
      const res = await app.app.inject({ method: 'GET', url: '/v3/plant/events?after=0', payloadAsStream: true })
      const stream = res.stream()
      let text = ''
      for await (const chunk of stream) {
        text += String(chunk)
        if (/^data: .*\n/m.test(text)) break
      }
      stream.destroy()
      const data = JSON.parse(/^data: (.*)$/m.exec(text)![1])
      assert.equal(data.actor, 'anonymous')
      assert.equal(typeof data.at, 'string')
    })
  })
}

test('plants import writes its changes as cli', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-actor-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'plants.csv')
  await writeFile(file, 'name,category,tags,status\nAloe,,,available\nFern,,,sold\n')
  const dataDir = join(dir, 'data')
  const run = await plants(['import', '--create', file, '--data-dir', dataDir])
  assert.equal(run.code, 0, run.stderr)
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  try {
    assert.deepEqual((await store.changes(0, 10)).items.map((c) => c.actor), ['cli', 'cli'])
  } finally {
    await store.close()
  }
})
