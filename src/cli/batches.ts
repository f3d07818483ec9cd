import { BatchRefused, type BatchOperation } from '../catalogue/batch.js'
import { PlantNotFound, SkuTaken, VersionMismatch } from '../catalogue/errors.js'
import type { ApplyOutcome } from './target-interface.js'

type ClientModule = typeof import('../client/plant-client.js')

// An import's batches: sent to the store or to the service, and their refusals as the import reports them.

type WireOperation = Parameters<ClientModule['batchPlants']>[1][number]

/** An operation as POST /v3/plant/batch takes it. */
export const wireOperation = (o: BatchOperation): WireOperation => o.op === 'create'
  ? { op: 'create', plant: o.fields }
  : o.op === 'update'
    ? { op: 'update', plant: { id: o.id, ...o.fields } }
    : o.op === 'patch' ? { op: 'patch', id: o.id, patch: o.patch } : { op: 'delete', id: o.id }

/**
 * Why a row naming a plant in the trash is refused: adding it as a new plant would leave two, once
 * the deleted one is restored. What the catalogue offers to restore it: the API and the staff page
 * (the command line has no restore of a plant). The words for a plant deleted since the import read
 * it too, found when planned or when written: a deleted plant goes to the trash.
 */
export const inTrash = (id: number): string =>
  `plant ${id} is in the trash: restore it first (POST /v3/trash/${id}/restore, or Restore in the staff page's Trash view), or clear the id to add it as a new plant`

/**
 * The same of a row an export wrote (it has updatedAt): the plant was there then, and someone has
 * deleted it since, most likely on purpose; a new plant in its place would undo that.
 */
export const deletedSinceExport = (id: number): string =>
  `plant ${id} was deleted after the file was exported, and is in the trash: leave the row out; or, to keep the plant after all, restore it (POST /v3/trash/${id}/restore, or Restore in the staff page's Trash view) and import again`

/** A store's BatchRefused as the outcome of applyAll on these operations (anything else is thrown again). */
export function refusedByStore (error: unknown, operations: BatchOperation[]): ApplyOutcome {
  if (!(error instanceof BatchRefused)) throw error
  return {
    ok: false,
    refused: error.refusals.map(({ index, error }) => {
      const operation = operations[index]
      return {
        index,
        reason: error instanceof SkuTaken
          ? `refused: ${error.message} (SKUs are unique ignoring case)`
          : error instanceof PlantNotFound && operation.op !== 'create'
            ? `refused: ${inTrash(operation.id)}`
            : error instanceof VersionMismatch ? 'refused: the plant changed while the import ran' : `refused: ${error.message}`
      }
    })
  }
}

/** A service's refusal of POST /v3/plant/batch (400, 404, 409, 412): its errors name the operations by index. */
export function refusedByService (status: number, errors: Array<{ path: string, message: string }>): ApplyOutcome {
  const refused = new Map<number, string[]>()
  for (const { path, message } of errors) {
    const match = /^\/operations\/(\d+)(.*)$/.exec(path)
    if (!match) continue
    const index = Number(match[1])
    refused.set(index, [...(refused.get(index) ?? []), `${match[2] || '(operation)'} ${message}`])
  }
  return { ok: false, refused: [...refused].map(([index, reasons]) => ({ index, reason: `refused by the service (${status}): ${reasons.join('; ')}` })) }
}
