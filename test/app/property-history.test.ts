import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// A random sequence of writes on two plants (PUT, PATCH, DELETE, restore from the trash, revert)
// against a model of the catalogue that keeps every version's fields: afterwards each plant's
// history, read back in pages of a random size, is the model's (version, kind, actor and each
// changed field's before and after), and each plant is the model's plant. The model works out the
// changes itself, from the fields it keeps, not with the service's code.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 25)

const FIELDS = ['name', 'category', 'tags', 'status', 'description', 'price', 'sku', 'barcode'] as const
type Field = typeof FIELDS[number]
type Fields = Record<Field, unknown>
interface ModelPlant {
  id: number
  fields: Fields
  version: number
  live: boolean
  /** The fields at each version (a delete and a restore keep them). */
  at: Map<number, Fields>
  /** Newest last. */
  history: Array<{ version: number, kind: string, changes: Record<string, [unknown, unknown]> }>
}

type Op =
  | { op: 'put', plant: number, fields: Partial<Fields> }
  | { op: 'patch', plant: number, patch: Partial<Fields> }
  | { op: 'delete', plant: number }
  | { op: 'restore', plant: number }
  | { op: 'revert', plant: number, back: number, status: boolean }

const which = fc.nat(1)
// A drawn SKU is a letter, made the plant's own (`<id>-A`) when sent, so no write is refused for
// another plant's, not even one of an earlier sequence.
const drawnFields = fc.record({
  name: fc.constantFrom('Fern', 'Ivy', 'Palm'),
  category: fc.constantFrom(null, 'indoor', 'outdoor'),
  tags: fc.shuffledSubarray(['a', 'b', 'c']),
  status: fc.constantFrom('available', 'pending', 'sold'),
  description: fc.constantFrom(null, 'Sunny', 'Shade'),
  price: fc.constantFrom(null, '1.00', '2.50'),
  sku: fc.constantFrom(null, 'A', 'B')
}, { requiredKeys: [] }) as fc.Arbitrary<Partial<Fields>>
const op: fc.Arbitrary<Op> = which.chain((plant) => fc.oneof(
  { weight: 3, arbitrary: drawnFields.map((fields) => ({ op: 'put' as const, plant, fields: { name: 'Fern', ...fields } })) },
  { weight: 4, arbitrary: drawnFields.map((patch) => ({ op: 'patch' as const, plant, patch })) },
  { weight: 1, arbitrary: fc.constant({ op: 'delete' as const, plant }) },
  { weight: 1, arbitrary: fc.constant({ op: 'restore' as const, plant }) },
  { weight: 3, arbitrary: fc.tuple(fc.nat(12), fc.boolean()).map(([back, status]) => ({ op: 'revert' as const, plant, back, status })) }
))

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/** The fields that differ between two versions, each [before, after]; a new plant's: those with a value, from null. */
function diff (before: Fields | null, after: Fields): Record<string, [unknown, unknown]> {
  const changes: Record<string, [unknown, unknown]> = {}
  for (const f of FIELDS) {
    if (before === null) {
      if (after[f] !== null && !same(after[f], [])) changes[f] = [null, after[f]]
    } else if (!same(before[f], after[f])) {
      changes[f] = [before[f], after[f]]
    }
  }
  return changes
}

const DEFAULTS: Fields = { name: '', category: null, tags: [], status: 'available', description: null, price: null, sku: null, barcode: null }
const fieldsOf = (record: Record<string, unknown>): Fields => Object.fromEntries(FIELDS.map((f) => [f, record[f]])) as Fields

/** A new version of the model's plant. */
function version (p: ModelPlant, kind: string, next: Fields): void {
  p.history.push({ version: p.version + 1, kind, changes: kind === 'updated' || kind === 'reverted' ? diff(p.fields, next) : {} })
  p.version++
  p.fields = next
  p.at.set(p.version, next)
}

/** Sends `o` and checks its answer against the model, which it then moves on. */
async function apply (app: TestApp, plants: ModelPlant[], o: Op): Promise<void> {
  const p = plants[o.plant]
  const what = `${JSON.stringify(o)} on ${JSON.stringify({ version: p.version, live: p.live })}`
  if (o.op === 'put' || o.op === 'patch') {
    const own = (f: Partial<Fields>): Partial<Fields> => typeof f.sku === 'string' ? { ...f, sku: `${p.id}-${f.sku}` } : f
    const res = o.op === 'put'
      ? await app.request({ method: 'PUT', url: '/v3/plant', payload: { id: p.id, ...own(o.fields) } })
      : await app.request({ method: 'PATCH', url: `/v3/plant/${p.id}`, payload: own(o.patch) })
    if (!p.live) return assert.equal(res.statusCode, 404, what)
    assert.equal(res.statusCode, 200, `${what}: ${res.body}`)
    if (o.op === 'put') version(p, 'updated', { ...DEFAULTS, ...own(o.fields) })
    else if (Object.keys(o.patch).length > 0) version(p, 'updated', { ...p.fields, ...own(o.patch) })
  } else if (o.op === 'delete') {
    const res = await app.request({ method: 'DELETE', url: `/v3/plant/${p.id}` })
    if (!p.live) return assert.equal(res.statusCode, 404, what)
    assert.equal(res.statusCode, 204, what)
    version(p, 'deleted', p.fields)
    p.live = false
  } else if (o.op === 'restore') {
    const res = await app.request({ method: 'POST', url: `/v3/trash/${p.id}/restore` })
    if (p.live) return assert.equal(res.statusCode, 404, what)
    assert.equal(res.statusCode, 200, what)
    version(p, 'restored', p.fields)
    p.live = true
  } else {
    // Back to a version there is (most draws), or to one beyond the newest (never kept).
    const target = o.back <= 10 ? 1 + (o.back % p.version) : p.version + o.back
    const res = await app.request({ method: 'POST', url: `/v3/plant/${p.id}/revert`, payload: { version: target, ...(o.status ? { status: true } : {}) } })
    if (!p.live) return assert.equal(res.statusCode, 404, what)
    const then = p.at.get(target)
    // The status goes back only when asked: otherwise it stays as it is now.
    const fields = then === undefined || o.status ? then : { ...then, status: p.fields.status }
    if (fields === undefined) {
      assert.equal(res.statusCode, 404, what)
      return assert.match(res.json().type, /\/version-not-kept$/, what)
    }
    assert.equal(res.statusCode, 200, `${what}: ${res.body}`)
    if (!same(fields, p.fields)) version(p, 'reverted', fields)
    assert.equal(res.headers.etag, `"${p.id}.${p.version}"`, what)
  }
}

/** The plant's history, read in pages of `limit`, oldest first. */
async function historyOf (app: TestApp, id: number, limit: number): Promise<Array<Record<string, any>>> {
  const entries: Array<Record<string, any>> = []
  let cursor: string | null = null
  do {
    const res = await app.request({ method: 'GET', url: `/v3/plant/${id}/history?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}` })
    assert.equal(res.statusCode, 200, res.body)
    assert.ok(res.json().items.length <= limit)
    entries.push(...res.json().items)
    cursor = res.json().nextCursor
  } while (cursor !== null)
  return entries.reverse()
}

for (const engine of ENGINES) {
  describe(`history properties on ${engine.name}`, { skip: engine.skip }, () => {
    test(`the history after a random sequence of writes is the model's (${RUNS} sequences)`, async (t) => {
      const app = await build(t, engine)
      let writes = 0
      await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 5 }), async (ops, limit) => {
        const plants: ModelPlant[] = []
        for (const name of ['Fern', 'Ivy']) {
          const record = await app.add({ name, tags: ['a'] })
          const fields = fieldsOf(record)
          plants.push({ id: record.id, fields, version: 1, live: true, at: new Map([[1, fields]]), history: [{ version: 1, kind: 'created', changes: diff(null, fields) }] })
        }
        for (const o of ops) await apply(app, plants, o)
        writes += ops.length
        for (const p of plants) {
          const entries = await historyOf(app, p.id, limit)
          assert.deepEqual(entries.map((e) => ({ version: e.version, kind: e.kind, changes: e.changes })), p.history)
          assert.ok(entries.every((e) => e.actor === 'anonymous'))
          const now = await app.request({ method: 'GET', url: `/v3/plant/${p.id}` })
          if (!p.live) {
            assert.equal(now.statusCode, 404)
            continue
          }
          assert.equal(now.headers.etag, `"${p.id}.${p.version}"`)
          assert.deepEqual(fieldsOf(now.json()), p.fields)
        }
      }), { numRuns: RUNS })
      t.diagnostic(`${writes} writes checked`)
    })
  })
}
