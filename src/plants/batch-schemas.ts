import { Type, type Static } from '@sinclair/typebox'
import { MAX_BATCH_OPERATIONS } from '../catalogue/batch.js'
import { component, ref } from '../http/schemas/components.js'
import { NewPlant, PlantPatch, PlantUpdate } from './schemas.js'
import { Id, Plant } from './record.js'

// POST /v3/plant/batch on the wire: one named component per operation, each made of the single
// routes' own schemas (NewPlant, PlantUpdate, PlantPatch), so an operation is valid exactly when
// its single request would be. The body is their union discriminated by `op`.

const IfMatch = Type.String({
  minLength: 1,
  maxLength: 1024,
  // The ETag as the ETag header and each result's `etag` give it, quotes included: "5.1" bare would match nothing.
  pattern: '^\\s*(\\*|(W/)?"[^"]*"(\\s*,\\s*(W/)?"[^"]*")*)\\s*$',
  'x-pattern-message': 'must be an ETag as the ETag header gives it, in double quotes (for example "\\"5.1\\"" in JSON), or *',
  description: 'Apply only if the plant still has this ETag (as the If-Match header of the single operation), quotes included (`"\\"5.1\\""` in JSON); else the batch is refused with 412.'
})

export const CreateOperation = component('CreateOperation', Type.Object({
  op: Type.Literal('create'),
  plant: ref(NewPlant)
}, { additionalProperties: false, description: 'Add a plant, as POST /v3/plant.' }))

export const UpdateOperation = component('UpdateOperation', Type.Object({
  op: Type.Literal('update'),
  plant: ref(PlantUpdate),
  ifMatch: Type.Optional(IfMatch)
}, { additionalProperties: false, description: 'Replace a plant named by plant.id, as PUT /v3/plant.' }))

export const PatchOperation = component('PatchOperation', Type.Object({
  op: Type.Literal('patch'),
  id: Id,
  patch: ref(PlantPatch),
  ifMatch: Type.Optional(IfMatch)
}, { additionalProperties: false, description: 'Change some fields of a plant, as PATCH /v3/plant/{id} (a JSON merge patch; `{}` changes nothing and adds no change to the feed).' }))

export const DeleteOperation = component('DeleteOperation', Type.Object({
  op: Type.Literal('delete'),
  id: Id,
  ifMatch: Type.Optional(IfMatch)
}, { additionalProperties: false, description: 'Delete a plant, as DELETE /v3/plant/{id} (here with an optional ifMatch).' }))

/** Each operation's schema by its `op`: the route validates an operation by the one it names. */
export const OPERATIONS = { create: CreateOperation, update: UpdateOperation, patch: PatchOperation, delete: DeleteOperation }

export const PlantBatch = component('PlantBatch', Type.Object({
  operations: Type.Array(Type.Union([ref(CreateOperation), ref(UpdateOperation), ref(PatchOperation), ref(DeleteOperation)], {
    discriminator: { propertyName: 'op', mapping: Object.fromEntries(Object.entries(OPERATIONS).map(([op, schema]) => [op, `#/components/schemas/${schema.$id}`])) }
  }), { minItems: 1, maxItems: MAX_BATCH_OPERATIONS, description: `1–${MAX_BATCH_OPERATIONS} operations, applied in order, all or nothing.` })
}, { additionalProperties: false, description: 'Operations on many plants, applied in one transaction: all of them, or (when any is refused) none.' }))
export type PlantBatch = Static<typeof PlantBatch>

export const BatchResults = component('BatchResults', Type.Object({
  results: Type.Array(Type.Union([
    Type.Object({
      status: Type.Literal(200),
      plant: ref(Plant),
      etag: Type.String({ description: 'The plant\'s ETag (as a single write\'s ETag header): send it as a later ifMatch or If-Match.' })
    }, { description: 'A create, update or patch: the plant as the operation left it, and its ETag.' }),
    Type.Object({ status: Type.Literal(204) }, { description: 'A delete.' })
  ]), { description: 'One result per operation, in the operations\' order.' })
}, { description: 'Every operation was applied.' }))
export type BatchResults = Static<typeof BatchResults>
