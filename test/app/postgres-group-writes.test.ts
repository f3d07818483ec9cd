import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { IdempotencyKeyReused, PlantNotFound, VersionMismatch } from '../../src/catalogue/errors.js'
import { toRecord, type PlantInput, type StoredPlant } from '../../src/catalogue/plant.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { freshSchema, inOneGroup as group, postgresEngine } from '../helpers/postgres-engine.js'

// The PostgreSQL group commit writes a group set-based (src/store/postgres/group-writes.ts): each
// write still gets its own answer, and the group costs the same statements whatever its size.

const DAY = 86_400_000
const fields = (name: string, extra: Partial<PlantInput> = {}): PlantInput =>
  ({ name, category: null, tags: [], status: 'available', ...extra })

async function open (t: { after (fn: () => Promise<void>): void }): Promise<PlantStore> {
  const scratch = await freshSchema()
  // A slow poll: the head poll's statements stay out of the counts below.
  const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 7 * DAY, pollIntervalMs: 60_000 })
  t.after(async () => { await store.close(); await scratch.drop() })
  return store
}

const value = <T>(r: PromiseSettledResult<T>): T => {
  if (r.status === 'rejected') throw r.reason
  return r.value
}

describe('PostgreSQL group writes', { skip: postgresEngine.skip }, () => {
  it('a group with a 412, a 404 and a reused key answers each write on its own and stores only the others', async (t) => {
    const store = await open(t)
    const a = (await store.create(fields('Aloe', { tags: ['succulent'] }))).plant
    const b = (await store.create(fields('Begonia', { status: 'pending' }))).plant
    const c = (await store.create(fields('Cactus'), { key: 'k-1', requestHash: 'h-1' })).plant
    const d = (await store.create(fields('Dracaena'))).plant
    const head = await store.head()

    const { settled, commits } = await group(() => [
      store.update(a.id, fields('Aloe vera'), [a.version + 7]), // 412: stale If-Match
      store.update(999_999, fields('Nobody')), // 404
      store.patch(b.id, { status: 'sold' }),
      store.patch(b.id, { tags: ['red'] }, [b.version + 1]), // sees the patch before it in the group
      store.create(fields('Cactus again'), { key: 'k-1', requestHash: 'h-other' }), // key reused with another body
      store.create(fields('Echeveria', { tags: ['succulent', 'small'] }), { key: 'k-2', requestHash: 'h-2' }),
      store.create(fields('Echeveria'), { key: 'k-2', requestHash: 'h-2' }), // replay of the one before, same group
      store.remove(d.id),
      store.patch(d.id, { status: 'sold' }) // after its delete in the same group: 404
    ] as Array<Promise<unknown>>)
    assert.equal(commits, 1, 'the writes were one group')

    assert.ok(settled[0].status === 'rejected' && settled[0].reason instanceof VersionMismatch)
    assert.ok(settled[1].status === 'rejected' && settled[1].reason instanceof PlantNotFound)
    // One group, one time: both patches' updatedAt is the group's.
    const { updatedAt } = value(settled[2]) as { updatedAt: string }
    assert.ok(updatedAt >= b.updatedAt)
    assert.deepEqual(value(settled[2]), { ...b, status: 'sold', version: b.version + 1, updatedAt })
    assert.deepEqual(value(settled[3]), { ...b, status: 'sold', tags: ['red'], version: b.version + 2, updatedAt })
    assert.ok(settled[4].status === 'rejected' && settled[4].reason instanceof IdempotencyKeyReused)
    const created = value(settled[5]) as { plant: { id: number }, replayed: boolean }
    assert.equal(created.replayed, false)
    assert.deepEqual(value(settled[6]), { plant: created.plant, replayed: true })
    assert.equal(value(settled[7]), undefined)
    assert.ok(settled[8].status === 'rejected' && settled[8].reason instanceof PlantNotFound)

    // Stored: only what was answered OK.
    assert.deepEqual(await store.get(a.id), a)
    assert.deepEqual(await store.get(b.id), { ...b, status: 'sold', tags: ['red'], version: b.version + 2, updatedAt })
    assert.equal(await store.get(d.id), undefined)
    assert.deepEqual(await store.get(c.id), c)
    assert.deepEqual(await store.get(created.plant.id), {
      ...created.plant, name: 'Echeveria', category: null, tags: ['succulent', 'small'], status: 'available', photos: [], version: 1, createdAt: updatedAt, updatedAt
    })
    assert.deepEqual((await store.list({ tags: ['succulent'], afterId: 0, limit: 10 })).map((p) => p.name), ['Aloe', 'Echeveria'])
    assert.deepEqual((await store.list({ tags: ['red'], afterId: 0, limit: 10 })).map((p) => p.id), [b.id])
    assert.deepEqual(await store.inventory(), { available: 3, pending: 0, sold: 1, units: { onHand: 0, reserved: 0, available: 0 } }) // Aloe, Cactus, Echeveria; Begonia

    // The feed: one change per stored write, in the group's order, and nothing else.
    const page = await store.changes(head, 100)
    assert.deepEqual(page.items.map((ch) => [ch.seq, ch.kind, ch.id, ch.version]), [
      [head + 1, 'updated', b.id, b.version + 1],
      [head + 2, 'updated', b.id, b.version + 2],
      [head + 3, 'created', created.plant.id, 1],
      [head + 4, 'deleted', d.id, d.version + 1]
    ])
    assert.deepEqual(page.items[2].plant, toRecord(await store.get(created.plant.id) as StoredPlant))
    // A replay after the group gives the stored answer.
    assert.deepEqual(await store.create(fields('Echeveria'), { key: 'k-2', requestHash: 'h-2' }), { plant: created.plant, replayed: true })
  })

  it('a group costs the same statements with 1 write as with 30, and creates alone are one statement', async (t) => {
    const store = await open(t)
    const plants = await Promise.all(Array.from({ length: 30 }, (_, i) => store.create(fields(`p${i}`, { tags: ['t'] })).then((r) => r.plant)))

    const oneCreate = await group(() => [store.create(fields('one'))])
    const manyCreates = await group(() => Array.from({ length: 30 }, (_, i) => store.create(fields(`new${i}`, { tags: ['x', `y${i}`] }))))
    assert.equal(oneCreate.commits, 1)
    assert.equal(manyCreates.commits, 1)
    assert.equal(oneCreate.statements, 1)
    assert.equal(manyCreates.statements, 1)

    const oneUpdate = await group(() => [store.update(plants[29].id, fields('changed', { status: 'sold' }))])
    const manyMixed = await group(() => plants.slice(0, 29).map((p, i) =>
      i % 3 === 0
        ? store.patch(p.id, { status: 'pending' }, [p.version])
        : i % 3 === 1 ? store.update(p.id, fields(`u${i}`, { tags: ['u'] })) : store.create(fields(`c${i}`), { key: `key-${i}`, requestHash: 'h' })) as Array<Promise<unknown>>)
    assert.equal(oneUpdate.commits, 1)
    assert.equal(manyMixed.commits, 1)
    assert.ok(manyMixed.settled.every((r) => r.status === 'fulfilled'), 'every write of the group succeeded')
    // BEGIN with the lock of the plants, write, COMMIT; with keys to claim, BEGIN on its own.
    assert.equal(oneUpdate.statements, 3)
    assert.equal(manyMixed.statements, 4)
    // 30 + 1 + 30 created, 1 sold, 10 patched to pending, 9 more created
    assert.deepEqual(await store.inventory(), { available: 61 - 1 - 10 + 9, pending: 10, sold: 1, units: { onHand: 0, reserved: 0, available: 0 } })

    const manyUpdates = await group(() => plants.slice(0, 29).map((p, i) => i % 2 === 0 ? store.update(p.id, fields(`again${i}`)) : store.remove(p.id)) as Array<Promise<unknown>>)
    assert.equal(manyUpdates.commits, 1)
    assert.ok(manyUpdates.settled.every((r) => r.status === 'fulfilled'), 'every write of the group succeeded')
    assert.equal(manyUpdates.statements, 3)
    // The even ones updated back to available (5 of them were pending), the odd ones deleted (5 pending, 9 available)
    assert.deepEqual(await store.inventory(), { available: 59 + 5 - 9, pending: 0, sold: 1, units: { onHand: 0, reserved: 0, available: 0 } })
  })

  it('text that array literals and JSON escape (quotes, backslashes, braces, commas, NULL, control characters, U+0000) goes through a group\'s create, update and delete exactly', async (t) => {
    const store = await open(t)
    const odd = ['"quoted", {braced}', 'back\\slash \\"', 'NULL', '\u0001\u001f\t\n', 'nul \u0000 and \uffff1', 'é 𝄞 \u2028']
    const plain = (await store.create(fields('plain'))).plant
    const gone = (await store.create(fields('gone'))).plant
    const head = await store.head()
    const { settled, commits } = await group(() => [
      store.create(fields(odd[0], { category: odd[1], tags: odd, description: odd[4], sku: 'S-1', barcode: null, price: '1.5' }), { key: 'odd-key', requestHash: 'h' }),
      store.update(plain.id, fields(odd[3], { category: odd[2], tags: [...odd].reverse(), description: odd[5] })),
      store.remove(gone.id)
    ] as Array<Promise<unknown>>)
    assert.equal(commits, 1)
    const created = (value(settled[0]) as { plant: StoredPlant }).plant
    const updated = value(settled[1]) as StoredPlant
    assert.deepEqual(await store.get(created.id), created)
    assert.deepEqual(await store.get(updated.id), updated)
    assert.deepEqual(updated.tags, [...odd].reverse())
    assert.deepEqual((await store.list({ tags: [odd[0]], afterId: 0, limit: 10 })).map((p) => p.id), [plain.id, created.id])
    assert.deepEqual((await store.list({ terms: ['quoted'], afterId: 0, limit: 10 })).map((p) => p.id), [created.id])
    const page = await store.changes(head, 10)
    assert.deepEqual(page.items.map((ch) => ch.plant), [toRecord(created), toRecord(updated), null])
    assert.deepEqual((await store.history(plain.id, undefined, 10))![0].changes.name, ['plain', odd[3]])
    assert.deepEqual((await store.trashed(gone.id))?.plant.name, 'gone')
    assert.deepEqual(await store.create(fields(odd[0], { category: odd[1], tags: odd, description: odd[4], sku: 'S-1', barcode: null, price: '1.5' }), { key: 'odd-key', requestHash: 'h' }),
      { plant: created, replayed: true })
  })

  it('a lone UTF-16 surrogate (refused by the API, not by the store) is written as U+FFFD, as a text parameter writes it', async (t) => {
    const store = await open(t)
    const { plant } = await store.create(fields('lone \ud800', { tags: ['\udc00'] }))
    const read = await store.get(plant.id)
    assert.equal(read?.name, 'lone \ufffd')
    assert.deepEqual(read?.tags, ['\ufffd'])
    const updated = await store.patch(plant.id, { category: 'c\udbff' })
    assert.equal(updated.category, 'c\udbff')
    assert.equal((await store.get(plant.id))?.category, 'c\ufffd')
  })

  it('GETs by id and inventory reads arriving together share one statement each, and each gets its answer', async (t) => {
    const store = await open(t)
    const plants = await Promise.all(Array.from({ length: 20 }, (_, i) => store.create(fields(`p${i}`, { status: i < 5 ? 'sold' : 'available' })).then((r) => r.plant)))
    const reads = await group(() => [
      ...plants.map((p) => store.get(p.id)), store.get(plants[3].id), store.get(999_999),
      store.inventory(), store.inventory()
    ] as Array<Promise<unknown>>)
    assert.equal(reads.statements, 2)
    assert.deepEqual(reads.settled.slice(0, 20).map(value), plants)
    assert.deepEqual(value(reads.settled[20]), plants[3])
    assert.equal(value(reads.settled[21]), undefined)
    assert.deepEqual(value(reads.settled[22]), { available: 15, pending: 0, sold: 5, units: { onHand: 0, reserved: 0, available: 0 } })
    assert.deepEqual(value(reads.settled[23]), { available: 15, pending: 0, sold: 5, units: { onHand: 0, reserved: 0, available: 0 } })
  })
})
