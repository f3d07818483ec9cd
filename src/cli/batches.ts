import { BatchRefused, type BatchOperation } from '../catalogue/batch.js'
import { PlantNotFound, SkuTaken, VersionMismatch } from '../catalogue/errors.js'
import type { ApplyOutcome } from './catalogue-interface.js'

type ClientModule = typeof import('../client/plant-client.js')

// An import's batches: sent to the store or to the service, and their refusals as the import reports them.

type WireOperation = Parameters<ClientModule['batchPlants']>[1][number]

/** An operation as POST /v3/plant/batch takes it. */
export const wireOperation = (o: BatchOperation): WireOperation => o.op === 'create'
  ? { op: 'create', plant: o.fields }
  : o.op === 'update'
    ? { op: 'update', plant: { id: o.id, ...o.fields } }
    : o.op === 'patch' ? { op: 'patch', id: o.id, patch: o.patch } : { op: 'delete', id: o.id }

/** The refusal of a row naming a plant deleted since the catalogue was read. */
export const GONE = 'refused: the plant is no longer in the catalogue (deleted since it was read)'

/** A store's BatchRefused as the outcome of applyAll (anything else is thrown again). */
export function refusedByStore (error: unknown): ApplyOutcome {
  if (!(error instanceof BatchRefused)) throw error
  return {
    ok: false,
    refused: error.refusals.map(({ index, error }) => ({
      index,
      reason: error instanceof SkuTaken
        ? `refused: ${error.message} (SKUs are unique ignoring case)`
        : error instanceof PlantNotFound
          ? GONE
          : error instanceof VersionMismatch ? 'refused: the plant changed while the import ran' : `refused: ${error.message}`
    }))
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
