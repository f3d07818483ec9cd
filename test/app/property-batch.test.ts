import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Random batches against a model of the catalogue: a batch the model applies whole is answered 200
// with the model's plants, in order, and one feed change per operation; a batch with any refused
// operation is answered with the first refusal's status and every refused operation by index, and
// leaves the catalogue and the feed exactly as they were.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 40)

interface ModelPlant { id: number, name: string, status: string, price: string | null, sku: string | null, version: number }
type Fields = { name: string, status: string, price?: string | null, sku?: string | null }
/** An operation on "the n-th plant there is" (or one that is not there), resolved against the model when the batch runs. */
type Drawn =
  | { op: 'create', plant: Fields }
  | { op: 'update', target: number | 'missing', plant: Fields, ifMatch: IfMatch }
  | { op: 'patch', target: number | 'missing', patch: Partial<Fields>, ifMatch: IfMatch }
  | { op: 'delete', target: number | 'missing', ifMatch: IfMatch }
type IfMatch = 'none' | 'current' | 'stale'

const name = fc.constantFrom('Fern', 'Ivy', 'Palm')
const status = fc.constantFrom('available', 'pending', 'sold')
const price = fc.constantFrom('1', '2.5', null)
// Few SKUs, in either case: batches often want one another plant has.
const sku = fc.constantFrom('A-1', 'a-1', 'B-2', null)
const target = fc.oneof({ weight: 9, arbitrary: fc.nat(50) }, { weight: 1, arbitrary: fc.constant('missing' as const) })
const ifMatch = fc.constantFrom<IfMatch>('none', 'none', 'current', 'current', 'stale')
const fields = fc.record({ name, status, price, sku }, { requiredKeys: ['name', 'status'] })
const drawn: fc.Arbitrary<Drawn> = fc.oneof(
  fc.record({ op: fc.constant('create' as const), plant: fields }),
  fc.record({ op: fc.constant('update' as const), target, plant: fields, ifMatch }),
  fc.record({ op: fc.constant('patch' as const), target, patch: fc.record({ name, status, price, sku }, { requiredKeys: [] }), ifMatch }),
  fc.record({ op: fc.constant('delete' as const), target, ifMatch })
)

const skuKey = (s: string | null | undefined): string | undefined => s === null || s === undefined ? undefined : s.toLowerCase()
const cents = (p: string | null | undefined): string | null => p === null || p === undefined ? null : Number(p).toFixed(2)

/** The wire operation, and what the model says of it: refused (status, path) or the plant after it (null: deleted). */
function applyToModel (plants: Map<number, ModelPlant>, d: Drawn, index: number, nextId: () => number): { wire: Record<string, unknown>, refused?: [number, string], after?: ModelPlant | null, change: boolean } {
  const at = `/operations/${index}`
  const ids = [...plants.keys()].filter((n) => n > 0) // a plant this batch creates has no id to name yet
  const id = d.op === 'create' ? 0 : d.target === 'missing' || ids.length === 0 ? 999_999 : ids[d.target % ids.length]
  const plant = plants.get(id)
  const etag = d.op === 'create' || d.ifMatch === 'none' ? undefined : `"${id}.${d.ifMatch === 'current' ? plant?.version ?? 1 : (plant?.version ?? 1) + 7}"`
  const taken = (wanted: string | null | undefined, self: number): boolean =>
    skuKey(wanted) !== undefined && [...plants.values()].some((p) => p.id !== self && skuKey(p.sku) === skuKey(wanted))
  if (d.op === 'create') {
    const wire = { op: 'create', plant: d.plant }
    if (taken(d.plant.sku, 0)) return { wire, refused: [409, `${at}/plant/sku`], change: false }
    const made = { id: nextId(), name: d.plant.name, status: d.plant.status, price: cents(d.plant.price), sku: d.plant.sku ?? null, version: 1 }
    plants.set(made.id, made)
    return { wire, after: made, change: true }
  }
  const wire = d.op === 'update'
    ? { op: 'update', plant: { id, ...d.plant }, ...(etag ? { ifMatch: etag } : {}) }
    : d.op === 'patch' ? { op: 'patch', id, patch: d.patch, ...(etag ? { ifMatch: etag } : {}) } : { op: 'delete', id, ...(etag ? { ifMatch: etag } : {}) }
  if (!plant) return { wire, refused: [404, d.op === 'update' ? `${at}/plant/id` : `${at}/id`], change: false }
  if (d.ifMatch === 'stale') return { wire, refused: [412, `${at}/ifMatch`], change: false }
  if (d.op === 'delete') {
    plants.delete(id)
    return { wire, after: null, change: true }
  }
  const next = d.op === 'update'
    ? { ...plant, name: d.plant.name, status: d.plant.status, price: cents(d.plant.price), sku: d.plant.sku ?? null }
    : { ...plant, ...d.patch, ...('price' in d.patch ? { price: cents(d.patch.price) } : {}) }
  const wantedSku = d.op === 'update' ? d.plant.sku : d.patch.sku
  // A SKU is claimed only when it changes (ignoring case): a plant may keep its own.
  if (skuKey(wantedSku) !== skuKey(plant.sku) && taken(wantedSku, id)) return { wire, refused: [409, `${at}/${d.op === 'update' ? 'plant' : 'patch'}/sku`], change: false }
  if (d.op === 'patch' && Object.keys(d.patch).length === 0) return { wire, after: plant, change: false }
  next.version = plant.version + 1
  plants.set(id, next)
  return { wire, after: next, change: true }
}

const view = (p: { id: number, name: string, status: string, price: string | null, sku: string | null }) => ({ id: p.id, name: p.name, status: p.status, price: p.price, sku: p.sku })

async function catalogue (request: TestApp['request']): Promise<unknown[]> {
  const res = await request({ method: 'GET', url: '/v3/plant?limit=500' })
  return res.json().items.map(view)
}

for (const engine of ENGINES) {
  describe(`batches against a model (${engine.name})`, { skip: engine.skip }, () => {
    test('all or nothing, results in order, errors by index, one feed change per operation', async (t) => {
      const { app, request, add } = await build(t, engine)
      let model = new Map<number, ModelPlant>()
      // A few plants to start from: on an empty catalogue nearly every batch names a plant that is not there.
      for (const name of ['Fern', 'Ivy', 'Palm', 'Fern', 'Ivy', 'Palm']) {
        const plant = await add({ name })
        model.set(plant.id, { id: plant.id, name, status: 'available', price: null, sku: null, version: 1 })
      }
      const seen = { applied: 0, refused: 0 }
      await fc.assert(fc.asyncProperty(fc.array(drawn, { minLength: 1, maxLength: 6 }), async (batch) => {
        const trial = new Map([...model].map(([id, p]) => [id, { ...p }]))
        let provisional = -1
        const outcomes = batch.map((d, i) => applyToModel(trial, d, i, () => provisional--))
        const refused = outcomes.flatMap((o) => o.refused ? [o.refused] : [])
        const before = await catalogue(request)
        const head = await app.store.head()
        const res = await request({ method: 'POST', url: '/v3/plant/batch', payload: { operations: outcomes.map((o) => o.wire) } })
        if (refused.length > 0) {
          seen.refused++
          assert.equal(res.statusCode, refused[0][0], res.body)
          assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), refused.map((r) => r[1]))
          assert.deepEqual(await catalogue(request), before, 'a refused batch changes no plant')
          assert.equal(await app.store.head(), head, 'and adds nothing to the feed')
          return
        }
        seen.applied++
        assert.equal(res.statusCode, 200, res.body)
        const { results } = res.json()
        // The service gives the ids: the model's provisional ones (negative) take them, in order.
        const ids = new Map<number, number>()
        results.forEach((r: { status: number, plant?: ModelPlant }, i: number) => {
          const after = outcomes[i].after
          if (after === null) return assert.deepEqual(r, { status: 204 })
          assert.equal(r.status, 200)
          if (after!.id < 0 && !ids.has(after!.id)) ids.set(after!.id, r.plant!.id)
          assert.deepEqual(view(r.plant!), view({ ...after!, id: ids.get(after!.id) ?? after!.id }), `operation ${i}`)
        })
        model = new Map([...trial.values()].map((p) => {
          const plant = { ...p, id: ids.get(p.id) ?? p.id }
          return [plant.id, plant]
        }))
        assert.deepEqual(await catalogue(request), [...model.values()].sort((a, b) => a.id - b.id).map(view))
        const { items } = await app.store.changes(head, 1000)
        const expected = outcomes.filter((o) => o.change)
        assert.deepEqual(items.map((c) => c.seq), expected.map((_, i) => head + i + 1), 'consecutive')
        assert.deepEqual(items.map((c) => c.kind), expected.map((o) => o.after === null ? 'deleted' : o.wire.op === 'create' ? 'created' : 'updated'), 'in order')
      }), { numRuns: RUNS })
      assert.ok(seen.applied > 0 && seen.refused > 0, `both kinds of batch were tried: ${JSON.stringify(seen)}`)
      t.diagnostic(`${seen.applied} batches applied, ${seen.refused} refused`)
    })
  })
}
