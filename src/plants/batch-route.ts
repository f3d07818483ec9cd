import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { BatchRefused, type BatchOperation, type BatchRefusal, type BatchResult } from '../catalogue/batch.js'
import { PlantNotFound, SkuTaken, VersionMismatch } from '../catalogue/errors.js'
import { toRecord } from '../catalogue/plant.js'
import { identityFields, skuKey } from '../catalogue/price-sku-barcode.js'
import type { Scope } from '../catalogue/keys.js'
import { securityFor, writeMetaOf } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { etagOf, ifMatchVersions } from '../http/resources/etag.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, HttpProblem, problemResponses, type FieldError } from '../http/problems/problem.js'
import { strictJsonParser } from '../http/input/json-body.js'
import { oneATurn } from '../http/limits/event-loop-queue.js'
import { batchBodyValidator } from './batch-validator.js'
import { BatchResults, PlantBatch } from './batch-schemas.js'
import { statusOnlyIsSelling } from './patch-route.js'
import { guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { SKU_TAKEN } from './routes.js'
import { idempotencyClaimKey } from '../http/resources/idempotency.js'
import { requestHash } from '../store/idempotency.js'
import { tags } from './record.js'
import { WriteHeaders, type PlantFields, type PlantUpdate } from './schemas.js'
import { Plant } from './record.js'

/** The body limit of this route alone: 500 operations of full plants fit; the service's 64 KiB would not. */
export const BATCH_BODY_LIMIT = 1024 * 1024

type Operation = BatchBody['operations'][number]
/** The body once validated (batch-validator.ts) and defaulted. */
interface BatchBody {
  operations: Array<
  | { op: 'create', plant: PlantFields }
  | { op: 'update', plant: PlantUpdate & PlantFields, ifMatch?: string }
  | { op: 'patch', id: number, patch: Partial<PlantFields>, ifMatch?: string }
  | { op: 'delete', id: number, ifMatch?: string }>
}

/** An operation of the wire as the store takes it (its ifMatch read as the single routes read If-Match). */
function toOperation (o: Operation): BatchOperation {
  switch (o.op) {
    case 'create': return { op: 'create', fields: o.plant }
    case 'update': {
      const { id, ...fields } = o.plant
      return { op: 'update', id, fields, expectedVersions: ifMatchVersions(o.ifMatch, id) }
    }
    case 'patch': return { op: 'patch', id: o.id, patch: o.patch, expectedVersions: ifMatchVersions(o.ifMatch, o.id) }
    case 'delete': return { op: 'delete', id: o.id, expectedVersions: ifMatchVersions(o.ifMatch, o.id) }
  }
}

/**
 * Each operation needs its single route's scope, so the batch needs the highest: a batch of patches
 * of `status` alone is a till's (`sell`); any other operation needs `write`, and is named by index.
 * Read once the body is valid (http/auth/auth.ts).
 */
function scopeOfBatch (body: unknown): { scope: Scope, paths: string[] } {
  const operations = (body as { operations?: unknown } | null)?.operations
  if (!Array.isArray(operations) || operations.length === 0) return { scope: 'write', paths: [] }
  const selling = (o: unknown): boolean => (o as { op?: unknown } | null)?.op === 'patch' && statusOnlyIsSelling((o as { patch?: unknown }).patch) === 'sell'
  const paths = operations.flatMap((o, i) => selling(o) ? [] : [`/operations/${i}`])
  return { scope: paths.length === 0 ? 'sell' : 'write', paths }
}

/** What the Idempotency-Key's hash covers: each operation's validated, defaulted content, members in a fixed order. */
function identityOf (operations: Operation[]): unknown[] {
  return ['batch', ...operations.map((o) => o.op === 'create'
    ? [o.op, identityFields(o.plant)]
    : o.op === 'update'
      ? [o.op, o.plant.id, identityFields(o.plant), o.ifMatch ?? null]
      : o.op === 'patch'
        ? [o.op, o.id, Object.entries(o.patch).sort(([a], [b]) => a < b ? -1 : 1), o.ifMatch ?? null]
        : [o.op, o.id, o.ifMatch ?? null])]
}

/** The schema each result's plant is serialised by: one object, so Fastify compiles its serialiser once (and caches it by this object). */
const PLANT_RESULT = ref(Plant)
/** Results serialised in one turn of the event loop: 500 plants at once held it for the whole answer. */
const SLICE = 50

interface Refusal {
  status: number
  code: 'not-found' | 'precondition-failed' | 'sku-taken'
  field: FieldError
  /** sku-taken by a stored plant: its id (the problem's `holder`). */
  holder?: number
  /** precondition-failed: the plant the operation names. */
  id?: number
}

const ifMatchOf = (o: Operation): string | undefined => o.op === 'create' ? undefined : o.ifMatch

/** The plant an operation names (none for a create). */
const idOf = (o: Operation): number | undefined => o.op === 'create' ? undefined : o.op === 'update' ? o.plant.id : o.id

/** The SKU key an operation leaves its plant with; undefined when it does not set one. */
function skuSetBy (o: Operation): string | undefined {
  const sku = o.op === 'create' || o.op === 'update' ? o.plant.sku : o.op === 'patch' ? o.patch.sku : undefined
  return typeof sku === 'string' ? skuKey(sku) : undefined
}

/**
 * What a refusal's message needs of an operation. The route keeps this while the store writes, not
 * the operation: a batch's parsed plants kept through its write were copied by each scavenge of the
 * event loop's heap and promoted, the pauses that held the loop longest beside single writes.
 */
interface Named { op: Operation['op'], id?: number, sku?: string, ifMatch?: string }
const namedOf = (o: Operation): Named => ({ op: o.op, id: idOf(o), sku: skuSetBy(o), ifMatch: ifMatchOf(o) })

/**
 * The earlier operation of the batch that holds the SKU operation `index` was refused: the last one
 * before it (and not refused itself) that gave its plant this SKU, when that plant is the holder or a
 * plant the batch created (whose id was rolled back with it, so naming it would name no plant).
 */
function holdingOperation (named: Named[], index: number, sku: string, holder: number, refused: Set<number>): number | undefined {
  for (let j = index - 1; j >= 0; j--) {
    if (refused.has(j) || named[j].sku !== skuKey(sku)) continue
    const id = named[j].id
    return id === undefined || id === holder ? j : undefined
  }
  return undefined
}

/** A refused operation as the contract names it: its status, code and the member at fault. */
function refusalOf (named: Named[], { index, error }: BatchRefusal, refused: Set<number>): Refusal {
  const operation = named[index]
  const at = `/operations/${index}`
  const body = operation.op === 'create' || operation.op === 'update' ? `${at}/plant` : `${at}/patch`
  if (error instanceof PlantNotFound) return { status: 404, code: 'not-found', field: { path: operation.op === 'update' ? `${at}/plant/id` : `${at}/id`, message: 'plant not found' } }
  if (error instanceof VersionMismatch) {
    return { status: 412, code: 'precondition-failed', field: { path: `${at}/ifMatch`, message: 'does not match the current ETag of the plant' }, id: operation.id }
  }
  if (error instanceof SkuTaken) {
    const j = holdingOperation(named, index, error.sku, error.holder, refused)
    if (j !== undefined) return { status: 409, code: 'sku-taken', field: { path: `${body}/sku`, message: `is taken by /operations/${j} (an earlier operation of this batch)` } }
    return { status: 409, code: 'sku-taken', field: { path: `${body}/sku`, message: `is taken by plant ${error.holder}` }, holder: error.holder }
  }
  throw error
}

/**
 * POST /v3/plant/batch: many creates, updates, patches and deletes in one request, applied by the
 * store in one transaction through the single operations' own writes (store.batch). Every operation
 * is checked by its single route's schema first; then the store applies them all or, when any is
 * refused, none, and the answer names every refused operation by its index.
 */
export const batchRoute: FastifyPluginAsyncTypebox<RouteOptions> = async (app, options) => {
  const { store } = options
  // This plugin's own JSON parser (parsers are per plugin): each batch body is decoded, parsed,
  // validated and handed to the store in a turn of the event loop of its own (event-loop-queue.ts), so
  // batches that arrive together do not hold the loop for all of them at once.
  const strict = strictJsonParser(app)
  const inTurn = oneATurn()
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => { inTurn(() => { strict(request, body, done) }) })
  // A 412 here names operations, not one plant: no ETag header, no `current`; each error's message names its plant's current ETag.
  const refusals = {
    412: { ...problemResponses([412, 'An operation\'s ifMatch is not the plant\'s current ETag: nothing applied; each error names its plant\'s current ETag'])[412], headers: { ...HEADERS.requestId } }
  }
  /**
   * Hands the batch to the store and lets go of its parsed body (the request's too): the store has
   * its own operations, and a refusal's messages need only each operation's names. A function of its
   * own so that nothing of the body stays in the handler's frame while it awaits the write.
   */
  const submit = (request: FastifyRequest): { named: Named[], written: Promise<BatchResult> } => {
    const { operations } = request.body as BatchBody
    // A single string: WriteHeaders validated it.
    const key = request.headers['idempotency-key'] as string | undefined
    const claim = key === undefined
      ? undefined
      : { key: idempotencyClaimKey(request, key), requestHash: requestHash(identityOf(operations)) }
    const written = store.batch(operations.map(toOperation), claim, writeMetaOf(request))
    request.body = undefined
    return { named: operations.map(namedOf), written }
  }
  // A static path: the router prefers it to /v3/plant/:id (whose POST is a 405) whatever the order of registration.
  app.post('/v3/plant/batch', {
    bodyLimit: BATCH_BODY_LIMIT,
    schema: {
      operationId: 'batch-plants',
      tags,
      // A till's `sell` key may send patches of `status` alone; any other operation needs `write` (scopeOfBatch).
      security: securityFor('sell'),
      summary: 'Create, update, patch and delete many plants at once, all or nothing',
      description: '1–500 operations (at most 1 MiB), each checked as its single request would be (POST /v3/plant, PUT /v3/plant, ' +
        'PATCH /v3/plant/{id}, DELETE /v3/plant/{id}), then applied in order in one transaction. 200: one result per operation, in order. ' +
        'Any invalid operation: 400 naming each by index (`/operations/3/plant/name`). Any refused operation (404, 412 for an ifMatch ' +
        'that is not current, 409 sku-taken): nothing is applied, and the status is the first refusal\'s, with `errors` naming every ' +
        'refused operation by index. The change feed gets one change per operation (none for a `{}` patch), consecutive and in order. ' +
        'Idempotency-Key covers the whole batch: a retry with the same key and body answers the first results (marked Idempotent-Replayed: true) and applies nothing. ' +
        'Each operation needs the scope of its single request: a key of scope `write`, or `sell` (a till) when every operation is a patch of `status` alone; ' +
        'a `sell` key\'s batch with any other operation is 403 insufficient-scope naming each such operation by index (`/operations/1`).',
      body: ref(PlantBatch),
      headers: WriteHeaders,
      response: {
        200: { ...ref(BatchResults), description: 'Every operation applied', headers: { ...HEADERS.requestId, ...HEADERS.idempotentReplayed } },
        ...refusals,
        ...problemResponses(...guardStatuses(true), [400, 'Invalid input: every invalid operation named by index'],
          [404, 'An operation names a plant that does not exist: nothing applied'], [SKU_TAKEN[0], `${SKU_TAKEN[1]}: nothing applied`],
          [413, 'Body larger than 1 MiB'], 422, 503)
      }
    },
    config: { scopeOfBody: scopeOfBatch },
    validatorCompiler: (route) => route.httpPart === 'body' ? app.lazySchemas.lazy(batchBodyValidator) : app.validatorCompiler!(route)
  }, async (request, reply) => {
    const { named, written } = submit(request)
    let plants
    let replayed
    try {
      ({ plants, replayed } = await written)
    } catch (error) {
      if (!(error instanceof BatchRefused)) throw error
      const refused = new Set(error.refusals.map((r) => r.index))
      const refusals = error.refusals.map((r) => refusalOf(named, r, refused))
      // Each stale operation's message names its plant's current ETag, read after the refusal, so a
      // client merges and retries without reading each plant first (a single PATCH's 412 hands it back too).
      for (const [n, r] of refusals.entries()) {
        if (r.id === undefined) continue
        const plant = await store.get(r.id).catch(() => undefined)
        if (plant === undefined) continue
        const etag = etagOf(plant)
        // The tag sent may be current outside the batch and stale only after an earlier operation of it.
        r.field.message += ifMatchVersions(named[error.refusals[n].index].ifMatch, r.id)?.includes(plant.version) === true
          ? ` as an earlier operation of this batch leaves it (${etag} is its ETag before the batch)`
          : ` (its current ETag is ${etag})`
      }
      const first = refusals[0]
      const problem = new HttpProblem(first.status, first.code,
        `Nothing was applied: ${refusals.map((r) => `${r.field.path} ${r.field.message}`).join('; ')}`,
        refusals.map((r) => r.field))
      // As a single write's 409: `holder` is the stored plant that has the SKU (the first such refusal's).
      problem.holder = refusals.find((r) => r.holder !== undefined)?.holder
      throw problem
    }
    reply.header('cache-control', 'no-store')
    if (replayed) reply.header('idempotent-replayed', 'true')
    // The answer is built SLICE results a turn, each plant by the response schema's own serialiser
    // (BatchResults is made of it), so other requests are served between slices of a large batch.
    const serialise = reply.compileSerializationSchema(PLANT_RESULT, '200')
    const results: string[] = []
    for (let i = 0; i < plants.length; i += SLICE) {
      // Through the same queue as the bodies: the answers of batches committed together (one group
      // commit) are built a slice a turn, not each one's first slice in the turn their commit lands.
      await new Promise<void>((resolve) => { inTurn(resolve) })
      for (const plant of plants.slice(i, i + SLICE)) results.push(plant === null ? '{"status":204}' : `{"status":200,"plant":${serialise(toRecord(plant) as unknown as Record<string, unknown>)},"etag":${JSON.stringify(etagOf(plant))}}`)
    }
    // A string is sent as it is: the route's serialiser is for objects.
    reply.type('application/json; charset=utf-8')
    return `{"results":[${results.join(',')}]}` as unknown as BatchResults
  })
  methodNotAllowed(app, '/v3/plant/batch', ['POST'])
}
