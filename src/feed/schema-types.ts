import type { Static } from '@sinclair/typebox'
import type { Change, ChangePage } from '../catalogue/changes.js'
import type { Holds, Same } from '../plants/schema-types.js'
import type * as feed from './schemas.js'

// The feed's schemas and the catalogue's change types, checked to be the same at compile time (as
// plants/schema-types.ts checks the plant's).

export type FeedSchemasMatchTheCatalogue = [
  Holds<Same<Static<typeof feed.Change>, Change>>,
  Holds<Same<Static<typeof feed.ChangePage>, ChangePage>>
]
