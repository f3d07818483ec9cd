import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController } from 'fastify'
import { completeFields, type PlantInput } from '../src/catalogue/plant.js'
import type { PlantQuery } from '../src/catalogue/query.js'
import { decodeCursor, encodeCursor } from '../src/plants/query.js'
import { Problem, problemBody } from '../src/http/problems/problem.js'
import { ref, registerComponents } from '../src/http/schemas/components.js'
import { LazySchemas } from '../src/http/schemas/lazy-schemas.js'
import { registerValidators } from '../src/http/input/validation.js'
import { IdParams, ListQuery, NewPlant, PAGE_SIZE, PlantPage, PlantUpdate, type PlantFields } from '../src/plants/schemas.js'
import { Plant } from '../src/plants/record.js'
import { plantFor } from './plants.js'

// The floor of the stack: Fastify with the service's own schemas and Ajv settings (validation, defaults and
// response serialisation) and pino at info, over a Map. No storage, hooks, metrics or headers of
// the service's own. Measured beside the ceiling, it splits the service's gap in two: what the
// framework costs (ceiling → floor) and what the service adds on top of it (floor → service).

const plants = new Map<number, Plant>()
let lastId = 0
// The record's times, as the service sets them (one string: the floor measures the framework, not a clock).
const times = { createdAt: new Date().toISOString(), updatedAt: new Date().toISOString() }
const stored = (id: number, fields: PlantInput): Plant => ({ id, ...completeFields(fields), stock: null, photos: [], ...times, version: 1 })
for (let i = 0; i < Number(process.env.PRELOAD ?? 0); i++) plants.set(++lastId, stored(lastId, plantFor(i)))

const app = Fastify({
  logger: { level: 'info' },
  bodyLimit: 64 * 1024,
  logController: new LogController({ disableRequestLogging: true })
}).withTypeProvider<TypeBoxTypeProvider>()
// The service's Ajv settings (strict bodies, its schema keywords): validation is part of the stack's cost.
// (Each compiled by its first request, in the warm-up, as in the service.)
registerValidators(app, new LazySchemas())
registerComponents(app)

const missing = problemBody(404, 'not-found', '')

app.post('/v3/plant', { schema: { body: ref(NewPlant), response: { 200: ref(Plant) } } }, async (request) => {
  const plant = stored(++lastId, request.body as PlantFields)
  plants.set(plant.id, plant)
  return plant
})
app.put('/v3/plant', { schema: { body: ref(PlantUpdate), response: { 200: ref(Plant), 404: ref(Problem) } } }, async (request, reply) => {
  const { id, ...fields } = request.body as PlantUpdate & PlantFields
  const body = stored(id, fields)
  if (!plants.has(body.id)) return reply.code(404).send(missing)
  plants.set(body.id, body)
  return body
})
app.get('/v3/plant/:id', { schema: { params: IdParams, response: { 200: ref(Plant), 404: ref(Problem) } } }, async (request, reply) => {
  const plant = plants.get(request.params.id)
  return plant ?? reply.code(404).send(missing)
})
app.get('/v3/plant', { schema: { querystring: ListQuery, response: { 200: ref(PlantPage) } } }, async (request) => {
  const limit = request.query.limit ?? PAGE_SIZE
  const query: PlantQuery = { statuses: [], tags: [], terms: [], sort: 'id' }
  let id = decodeCursor(request.query.cursor, query)?.id ?? 0
  const items: Plant[] = []
  while (items.length < limit && id < lastId) {
    const plant = plants.get(++id)
    if (plant) items.push(plant)
  }
  return { items, nextCursor: id < lastId ? encodeCursor(query, { id }) : null }
})

app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' }).then((address) => {
  process.stdout.write(`listening ${new URL(address).port}\n`)
}).catch((err) => { process.stderr.write(`${String(err)}\n`); process.exit(1) })
process.on('SIGTERM', () => { void app.close() })
