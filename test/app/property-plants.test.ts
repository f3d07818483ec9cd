import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Ajv } from 'ajv'
import fc from 'fast-check'
import type { TSchema } from '@sinclair/typebox'
import type { LightMyRequestResponse } from 'fastify'
import { canonicalPrice, isGtin } from '../../src/catalogue/price-sku-barcode.js'
import { FREE_TEXT_PATTERN, LABEL_PATTERN, TEXT_PATTERN } from '../../src/http/problems/messages.js'
import { ListQuery, NewPlant, PlantUpdate } from '../../src/plants/schemas.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Properties of the API, with the inputs drawn from the same TypeBox schemas that validate requests:
// a rule changed in schemas.ts changes what is generated here, so the two cannot drift apart.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150)

type JsonSchema = TSchema & Record<string, any>

/** Values valid for `schema`, for the JSON Schema subset the plant schemas use. */
export function arbitraryOf (schema: JsonSchema): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type: string) => arbitraryOf({ ...schema, type })))
  switch (schema.type) {
    case 'null':
      return fc.constant(null)
    case 'string': {
      if (schema['x-gtin'] === true) return gtin
      // A pattern of its own (a price, a SKU): drawn from it, as random text would almost never match.
      if (schema.pattern !== undefined && ![TEXT_PATTERN, FREE_TEXT_PATTERN, LABEL_PATTERN].includes(schema.pattern)) return fc.stringMatching(new RegExp(schema.pattern))
      // Code points, as the validator counts them ('binary' also reaches the astral planes).
      const text = fc.string({ unit: 'binary', minLength: schema.minLength ?? 0, maxLength: schema.maxLength ?? 40 })
      if (schema.pattern === undefined) return text
      const pattern = new RegExp(schema.pattern, 'u')
      return text.filter((s) => pattern.test(s))
    }
    case 'integer': {
      const min = schema.minimum ?? Number.MIN_SAFE_INTEGER
      const max = schema.maximum ?? Number.MAX_SAFE_INTEGER
      return fc.oneof(fc.constantFrom(min, max), fc.maxSafeInteger().map((n) => min + Math.abs(n) % (max - min + 1)))
    }
    case 'array': {
      const constraints = { minLength: schema.minItems ?? 0, maxLength: schema.maxItems ?? 10 }
      return schema.uniqueItems ? fc.uniqueArray(arbitraryOf(schema.items), constraints) : fc.array(arbitraryOf(schema.items), constraints)
    }
    case 'object': {
      const properties = Object.fromEntries(Object.entries(schema.properties as Record<string, JsonSchema>).map(([k, v]) => [k, arbitraryOf(v)]))
      return fc.record(properties, { requiredKeys: schema.required ?? [] })
    }
    default:
      throw new Error(`no arbitrary for schema ${JSON.stringify(schema)}`)
  }
}

/** A GTIN of 8, 12, 13 or 14 digits, its last digit made the check digit of the others. */
const gtin = fc.constantFrom(8, 12, 13, 14).chain((n) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n - 1, maxLength: n - 1 })).map((digits) => {
  const body = digits.join('')
  return [...'0123456789'].map((d) => body + d).find(isGtin)!
})

/** The defaults a schema's optional members take when absent. */
const defaultsOf = (schema: JsonSchema): Record<string, unknown> =>
  Object.fromEntries(Object.entries(schema.properties as Record<string, JsonSchema>).filter(([, v]) => 'default' in v).map(([k, v]) => [k, v.default]))

// An oracle independent of the service: the same schemas through a separate Ajv, without defaults.
const ajv = new Ajv({ strict: false, allErrors: true })
const validNewPlant = ajv.compile(NewPlant)
const validUpdate = ajv.compile(PlantUpdate)

const newPlant = arbitraryOf(NewPlant) as fc.Arbitrary<Record<string, unknown>>

/** Everything the catalogue holds: plants with their versions, and the change log. */
async function snapshot (api: TestApp): Promise<string> {
  const plants = await api.app.store.list({ afterId: 0, limit: 1_000_000 })
  const changes = await api.app.store.changes(0, 1_000_000)
  return JSON.stringify({ plants, changes })
}

/** A 4xx must be the contract's problem body, naming the request and nothing internal. */
function assertProblem (res: LightMyRequestResponse, what: string): void {
  assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8$/, what)
  const body = res.json()
  assert.equal(body.status, res.statusCode, what)
  assert.equal(typeof body.type, 'string', what)
  assert.equal(typeof body.title, 'string', what)
  assert.equal(body.requestId, res.headers['x-request-id'], what)
  // A stack frame names a file ("at fn (/path/file.js:1:2)", "at node:internal/…:1:2"); a message's
  // example time ("…at a leap second, e.g. 12:00:00") is not one.
  assert.doesNotMatch(res.body, /\bat (?:\S+ \()?(?:file:\/\/|\/|node:)\S*:\d+:\d+|node_modules|\/work\/|SQLITE|stack/i, `${what}: internals leaked`)
}

for (const engine of ENGINES) {
  describe(`properties on ${engine.name}`, { skip: engine.skip }, () => {
    test(`any valid Plant round-trips through POST then GET (${RUNS} cases)`, async (t) => {
      const api = await build(t, engine)
      let cases = 0
      await fc.assert(fc.asyncProperty(newPlant, async (plant) => {
        cases++
        assert.ok(validNewPlant(plant), 'the generator made an invalid plant')
        const created = await api.request({ method: 'POST', url: '/v3/plant', payload: plant })
        assert.equal(created.statusCode, 200, created.body)
        const { id, createdAt, updatedAt } = created.json()
        const fields = { ...defaultsOf(NewPlant), ...plant }
        const expected = { id, ...fields, price: canonicalPrice(fields.price as string | null), stock: null, photos: [], createdAt, updatedAt, version: 1 }
        assert.match(createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        assert.equal(updatedAt, createdAt)
        assert.deepEqual(created.json(), expected)
        const read = await api.request({ method: 'GET', url: `/v3/plant/${expected.id}` })
        assert.equal(read.statusCode, 200)
        assert.deepEqual(read.json(), expected)
        assert.equal(read.headers.etag, created.headers.etag)
        // Its SKU goes with it: the next case may draw the same one.
        assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${id}` })).statusCode, 204)
      }), { numRuns: RUNS })
      t.diagnostic(`${cases} plants round-tripped`)
    })

    test(`any body to any route: never a 5xx, 4xx in the contract's shape, refused requests change nothing (${RUNS * 2} cases)`, async (t) => {
      const api = await build(t, engine)
      for (let i = 0; i < 5; i++) await api.add({ name: `seed ${i}`, tags: ['seed'] })
      const members = Object.keys(PlantUpdate.properties)
      // Near misses start from a valid plant and break one thing, so they reach the field rules.
      const nearMiss = fc.tuple(newPlant, fc.oneof(fc.constantFrom(...members, '__proto__', 'staus', 'constructor'), fc.string()), fc.jsonValue())
        .map(([plant, key, value]) => JSON.stringify({ ...plant, [key]: value }))
      const body = fc.oneof(
        fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
        nearMiss,
        fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.constant(undefined)
      )
      const contentType = fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', undefined, 'application/json; charset=latin1')
      // Not empty: test/helpers/openapi-check.ts matches {id} to one or more characters, so /v3/plant/ (400 here) reads as undocumented.
      const idSegment = fc.oneof(fc.nat({ max: 20 }).map(String), fc.constantFrom('0', '-1', '1e3', '0x10', '01', '9007199254740992', '1.5', '%00', '%F0%9F%8C%BF'), fc.string({ minLength: 1 }).map(encodeURIComponent))
      const queryKey = fc.oneof(fc.constantFrom(...Object.keys(ListQuery.properties)), fc.string())
      const query = fc.array(fc.tuple(queryKey, fc.oneof(fc.string({ unit: 'binary' }), fc.nat().map(String))), { maxLength: 5 })
        .map((pairs) => new URLSearchParams(pairs).toString())
      const request = fc.oneof(
        fc.record({ method: fc.constantFrom('POST', 'PUT'), url: fc.constant('/v3/plant'), body, contentType }),
        fc.record({ method: fc.constantFrom('GET', 'DELETE'), url: idSegment.map((id) => `/v3/plant/${id}`), body, contentType }),
        fc.record({ method: fc.constant('GET'), url: query.map((q) => `/v3/plant?${q}`), body, contentType })
      )
      let before = await snapshot(api)
      let cases = 0
      const statuses = new Map<number, number>()
      await fc.assert(fc.asyncProperty(request, async ({ method, url, body, contentType }) => {
        cases++
        const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {}
        const res = await api.request({ method: method as 'GET', url, payload: body, headers })
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        const what = `${method} ${url} [${contentType}] ${String(body).slice(0, 120)} → ${res.statusCode} ${res.body.slice(0, 200)}`
        assert.ok(res.statusCode < 500, what)
        assert.ok(typeof res.headers['x-request-id'] === 'string', what)
        if (res.statusCode >= 400) assertProblem(res, what)
        const after = await snapshot(api)
        if (res.statusCode >= 200 && res.statusCode < 300 && method !== 'GET') {
          // A write may only be accepted if the schemas say its input was valid.
          // A DELETE's body (even an empty string) is not read: only POST and PUT bodies are parsed here.
          const parsed = typeof body === 'string' && method !== 'DELETE' ? JSON.parse(body) : undefined
          if (method === 'POST') assert.ok(validNewPlant(parsed), `${what}: accepted an invalid plant`)
          if (method === 'PUT') assert.ok(validUpdate(parsed), `${what}: accepted an invalid update`)
          before = after
        } else {
          assert.equal(after, before, `${what}: the catalogue changed`)
        }
      }), { numRuns: RUNS * 2 })
      t.diagnostic(`${cases} requests; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`)
    })

    test('a lone UTF-16 surrogate in a string is refused, or stored and returned exactly', async (t) => {
      const api = await build(t, engine)
      await fc.assert(fc.asyncProperty(newPlant, fc.constantFrom('\ud800', '\udfff', '\udbff'), async (plant, lone) => {
        const sent = { ...plant, name: `${String(plant.name)}${lone}` }
        const res = await api.request({ method: 'POST', url: '/v3/plant', payload: JSON.stringify(sent), headers: { 'content-type': 'application/json' } })
        if (res.statusCode !== 200) return
        const read = await api.request({ method: 'GET', url: `/v3/plant/${res.json().id}` })
        assert.equal(read.json().name, sent.name)
      }), { numRuns: 20 })
    })

    test('the same body with its members in another order replays under the same Idempotency-Key', async (t) => {
      const api = await build(t, engine)
      let n = 0
      await fc.assert(fc.asyncProperty(newPlant, async (drawn) => {
        const key = `order-${n++}`
        // One app for every run: a drawn SKU made unique, or a repeat of an earlier run's is 409 sku-taken.
        const plant = typeof drawn.sku === 'string' ? { ...drawn, sku: `${drawn.sku.slice(0, 50)}.${n}` } : drawn
        const first = await api.request({ method: 'POST', url: '/v3/plant', payload: plant, headers: { 'idempotency-key': key } })
        const reordered = Object.fromEntries(Object.entries({ ...defaultsOf(NewPlant), ...plant }).reverse())
        const again = await api.request({ method: 'POST', url: '/v3/plant', payload: reordered, headers: { 'idempotency-key': key } })
        assert.equal(again.statusCode, 200, again.body)
        assert.deepEqual(again.json(), first.json())
      }), { numRuns: 20 })
    })

    test(`random sequences of create, update, delete, read and list agree with an in-memory model (${Math.ceil(RUNS / 3)} sequences)`, async (t) => {
      let sequences = 0
      let commands = 0
      const api = await build(t, engine)
      // One app for every sequence (building one costs more than a sequence): each starts on an emptied
      // catalogue, with ids continuing from the last sequence and idempotency keys of its own.
      let lastId = 0
      const commandArbs = [
        fc.tuple(newPlant, fc.option(fc.constantFrom('key-a', 'key-b', 'key-c'), { nil: undefined })).map(([fields, key]) => new Create(fields, key)),
        fc.tuple(fc.nat(), newPlant, fc.constantFrom<IfMatch>('none', 'current', 'stale', 'star', 'garbage')).map(([pick, fields, ifMatch]) => new Update(pick, fields, ifMatch)),
        fc.nat().map((pick) => new Delete(pick)),
        fc.nat().map((pick) => new Read(pick)),
        fc.option(fc.constantFrom('available', 'pending', 'sold'), { nil: undefined }).map((status) => new List(status))
      ]
      await fc.assert(fc.asyncProperty(fc.commands(commandArbs, { maxCommands: 60, size: 'large' }), async (cmds) => {
        sequences++
        for (const plant of await api.app.store.list({ afterId: 0, limit: 1_000_000 })) await api.app.store.remove(plant.id)
        const model = new Model(lastId, `s${sequences}-`)
        await fc.asyncModelRun(() => ({ model, real: api }), [...cmds].map((c) => { commands++; return c }))
        lastId = model.lastId
      }), { numRuns: Math.ceil(RUNS / 3) })
      t.diagnostic(`${sequences} sequences, ${commands} commands, each checked against the model`)
    })
  })
}

// The model: what a catalogue must hold after each acknowledged change.
type Record_ = Record<string, unknown> & { id: number }
class Model {
  constructor (public lastId: number, readonly keyPrefix: string) {}
  plants = new Map<number, { record: Record_, etag: string, earlier: string[] }>()
  deleted = new Set<number>()
  keys = new Map<string, { body: string, response: Record_ }>()

  /** An id to act on: mostly a live plant, sometimes a deleted one or one never made. */
  pick (n: number): number {
    const ids = [...this.plants.keys(), ...this.deleted, this.lastId + 1 + (n % 1000)]
    return ids[n % ids.length]
  }
}

type IfMatch = 'none' | 'current' | 'stale' | 'star' | 'garbage'

/**
 * The record the model expects for `fields` (defaulted) at `version`: the price as the record shows
 * it, the times as the service set them; the version the one its ETag names.
 */
function recordOf (answer: Record_, fields: Record<string, unknown>, version: number, etag: unknown): Record_ {
  const record = { id: answer.id, ...fields, price: canonicalPrice(fields.price as string | null), stock: null, photos: [], createdAt: answer.createdAt, updatedAt: answer.updatedAt, version }
  assert.deepEqual(answer, record)
  assert.equal(etag, `"${String(answer.id)}.${version}"`)
  assert.match(String(record.createdAt), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  return record
}

/** When another live plant holds the SKU (ignoring case), the write must be 409 naming it: true then. */
function skuHeld (m: Model, sku: unknown, id: number | undefined, res: LightMyRequestResponse): boolean {
  if (typeof sku !== 'string') return false
  const holder = [...m.plants.values()].find((p) => p.record.id !== id && typeof p.record.sku === 'string' && p.record.sku.toLowerCase() === sku.toLowerCase())
  if (holder === undefined) return false
  assert.equal(res.statusCode, 409, res.body)
  assert.equal(res.json().holder, holder.record.id)
  return true
}

class Create implements fc.AsyncCommand<Model, TestApp> {
  constructor (readonly fields: Record<string, unknown>, readonly key: string | undefined) {}
  check = (): boolean => true
  async run (m: Model, api: TestApp): Promise<void> {
    const body = JSON.stringify(this.fields)
    const key = this.key && m.keyPrefix + this.key
    const res = await api.request({ method: 'POST', url: '/v3/plant', payload: body, headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) } })
    const earlier = key === undefined ? undefined : m.keys.get(key)
    if (earlier && earlier.body !== body) {
      assert.equal(res.statusCode, 422, res.body)
      return
    }
    if (earlier) {
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json(), earlier.response, 'a retry returns the first response')
      return
    }
    if (skuHeld(m, this.fields.sku, undefined, res)) return
    assert.equal(res.statusCode, 200, res.body)
    const record = recordOf(res.json(), { ...defaultsOf(NewPlant), ...this.fields }, 1, res.headers.etag)
    assert.equal(record.updatedAt, record.createdAt)
    assert.ok(record.id > m.lastId, `ids increase and are never reused: ${record.id} after ${m.lastId}`)
    m.lastId = record.id
    m.plants.set(record.id, { record, etag: String(res.headers.etag), earlier: [] })
    if (key) m.keys.set(key, { body, response: record })
  }

  toString = (): string => `POST ${JSON.stringify(this.fields)}${this.key ? ` key ${this.key}` : ''}`
}

class Update implements fc.AsyncCommand<Model, TestApp> {
  constructor (readonly pick: number, readonly fields: Record<string, unknown>, readonly ifMatch: IfMatch) {}
  check = (): boolean => true
  async run (m: Model, api: TestApp): Promise<void> {
    const id = m.pick(this.pick)
    const plant = m.plants.get(id)
    const stale = plant?.earlier.at(-1)
    const ifMatch = { none: undefined, current: plant?.etag, stale: stale ?? '"0.0"', star: '*', garbage: 'not-an-etag' }[this.ifMatch]
    const res = await api.request({ method: 'PUT', url: '/v3/plant', payload: { id, ...this.fields }, headers: ifMatch === undefined ? {} : { 'if-match': ifMatch } })
    if (!plant) {
      assert.equal(res.statusCode, 404, res.body)
      return
    }
    const matches = ifMatch === undefined || ifMatch === '*' || ifMatch === plant.etag
    if (!matches) {
      assert.equal(res.statusCode, 412, res.body)
      return
    }
    if (skuHeld(m, this.fields.sku, id, res)) return
    assert.equal(res.statusCode, 200, res.body)
    const record = recordOf(res.json(), { ...defaultsOf(PlantUpdate), ...this.fields }, Number(plant.record.version) + 1, res.headers.etag)
    assert.equal(record.createdAt, plant.record.createdAt, 'createdAt never moves')
    assert.ok(String(record.updatedAt) >= String(plant.record.updatedAt), 'updatedAt moves forward')
    const etag = String(res.headers.etag)
    assert.ok(etag !== plant.etag && !plant.earlier.includes(etag), 'every update gives a new ETag')
    m.plants.set(id, { record, etag, earlier: [...plant.earlier, plant.etag] })
  }

  toString = (): string => `PUT #${this.pick} if-match:${this.ifMatch} ${JSON.stringify(this.fields)}`
}

class Delete implements fc.AsyncCommand<Model, TestApp> {
  constructor (readonly pick: number) {}
  check = (): boolean => true
  async run (m: Model, api: TestApp): Promise<void> {
    const id = m.pick(this.pick)
    const res = await api.request({ method: 'DELETE', url: `/v3/plant/${id}` })
    if (!m.plants.has(id)) {
      assert.equal(res.statusCode, 404, res.body)
      return
    }
    assert.equal(res.statusCode, 204, res.body)
    m.plants.delete(id)
    m.deleted.add(id)
  }

  toString = (): string => `DELETE #${this.pick}`
}

class Read implements fc.AsyncCommand<Model, TestApp> {
  constructor (readonly pick: number) {}
  check = (): boolean => true
  async run (m: Model, api: TestApp): Promise<void> {
    const id = m.pick(this.pick)
    const res = await api.request({ method: 'GET', url: `/v3/plant/${id}` })
    const plant = m.plants.get(id)
    if (!plant) {
      assert.equal(res.statusCode, 404, res.body)
      return
    }
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), plant.record)
    assert.equal(res.headers.etag, plant.etag)
  }

  toString = (): string => `GET #${this.pick}`
}

class List implements fc.AsyncCommand<Model, TestApp> {
  constructor (readonly status: string | undefined) {}
  check = (): boolean => true
  async run (m: Model, api: TestApp): Promise<void> {
    const res = await api.request({ method: 'GET', url: `/v3/plant?limit=500${this.status ? `&status=${this.status}` : ''}` })
    assert.equal(res.statusCode, 200, res.body)
    const expected = [...m.plants.values()].map((p) => p.record).filter((r) => !this.status || r.status === this.status).sort((a, b) => a.id - b.id)
    assert.deepEqual(res.json(), { items: expected, nextCursor: null })
  }

  toString = (): string => `LIST ${this.status ?? 'all'}`
}
