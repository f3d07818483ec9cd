import type { Static } from '@sinclair/typebox'
import type { Photo } from '../catalogue/photo.js'
import type { Inventory, Plant, PlantFields, PlantPatch, PlantStatus } from '../catalogue/plant.js'
import type { Sort } from '../catalogue/query.js'
import type * as record from './record.js'
import type * as plants from './schemas.js'

// The wire's schemas and the catalogue's types, checked to be the same at compile time: a member
// added to, dropped from or retyped in one and not the other fails `npm run typecheck` here.

/**
 * true when each type is assignable to the other and both name the same members: assignability
 * alone lets an optional member (`price?`) on one side only pass.
 */
type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? SameKeys<A, B> : false) : false
export type Holds<T extends true> = T

export type SchemasMatchTheCatalogue = [
  Holds<Same<Static<typeof record.Plant>, Plant>>,
  Holds<Same<Required<Static<typeof plants.NewPlant>>, PlantFields>>,
  Holds<Same<Required<Static<typeof plants.PlantUpdate>>, PlantFields & { id: number }>>,
  Holds<Same<Static<typeof plants.PlantPatch>, PlantPatch>>,
  Holds<Same<Static<typeof plants.Inventory>, Inventory>>,
  Holds<Same<NonNullable<Static<typeof plants.ListQuery>['status']>, PlantStatus[]>>,
  Holds<Same<NonNullable<Static<typeof plants.ListQuery>['sort']>, Sort>>,
  Holds<Same<Static<typeof record.Photo>, Photo>>
]
