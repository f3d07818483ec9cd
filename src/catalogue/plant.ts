import type { Photo } from './photo.js'

// The catalogue's own words for a plant, spoken by the store, the routes and the commands alike.
// The HTTP schemas (plants/schemas.ts) are checked against these types (plants/schema-types.ts).

export const STATUSES = ['available', 'pending', 'sold'] as const
export type PlantStatus = typeof STATUSES[number]

/** A plant's fields once validated and defaulted: what a create or a whole update writes. */
export interface PlantFields {
  name: string
  category: string | null
  tags: string[]
  status: PlantStatus
}

/** A JSON merge patch of the fields: members present change, absent ones are kept; `{}` changes nothing. */
export type PlantPatch = Partial<PlantFields>

/** A plant as clients see it (its status a string: the seed does not restrict a response to the enumeration). */
export interface Plant {
  id: number
  name: string
  category: string | null
  tags: string[]
  status: string
  photos: Photo[]
}

/** A plant as stored: the record plus the version its ETag is made from. */
export interface StoredPlant extends Plant { version: number }

/** The record a client sees (and the feed keeps): the stored plant without its version. */
export const toRecord = ({ id, name, category, tags, status, photos }: Plant): Plant => ({ id, name, category, tags, status, photos: photos ?? [] })

/** The number of plants of each status. */
export type Inventory = Record<PlantStatus, number>
