import type { Plant, PlantFields } from '../catalogue/plant.js'
import type { PlantQuery } from '../catalogue/query.js'

// The catalogue a command works on, whatever holds it (a data folder, PostgreSQL, a running service):
// each holder's module implements this, and catalogue.ts opens the one the command names.

export type CreateOutcome = { ok: true, id: number } | { ok: false, reason: string }
export interface NewRow { fields: PlantFields, line: number }

export interface Catalogue {
  /** For messages: "data folder ./data" or "service http://…". */
  readonly where: string
  /** Every plant in id order (or those `query` finds, in its order), one keyset page at a time: memory stays flat at any size. */
  pages (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]>
  /** Adds the rows; a row the catalogue refuses is an outcome, a failure of the catalogue throws. */
  createAll (rows: NewRow[]): Promise<CreateOutcome[]>
  close (): Promise<void>
}
