import { Type, type Static } from '@sinclair/typebox'
import { TRASH_PAGE_DEFAULT, TRASH_PAGE_MAX } from '../catalogue/trash.js'
import { component, ref } from '../http/schemas/components.js'
import { Plant } from './record.js'

// The trash's schemas: the only source of its validation, types and document.

export const TrashedPlant = component('TrashedPlant', Type.Object({
  id: Type.Integer({ minimum: 1, description: 'The plant\'s id: a restore brings it back under it.' }),
  version: Type.Integer({ minimum: 1, description: 'The entry\'s version (the deleted change\'s): a restore\'s If-Match is `"<id>.<version>"`.' }),
  trashedAt: Type.String({ description: 'When the plant was deleted: RFC 3339, UTC, with milliseconds. It is purged TRASH_RETENTION_DAYS after (`purgeAt`).' }),
  purgeAt: Type.String({ description: 'When the hourly purge takes it, for good: `trashedAt` plus TRASH_RETENTION_DAYS, RFC 3339, UTC, with milliseconds. The purge runs hourly, so it may go up to an hour later; restore it before then.' }),
  trashedBy: Type.Union([Type.String(), Type.Null()], { description: 'Who deleted it: the key\'s name, `anonymous` without one.' }),
  plant: ref(Plant)
}, { additionalProperties: false, description: 'A deleted plant in the trash, as it was when deleted (photos included): `plant.version` is its last version, one below the entry\'s `version`, which a restore\'s If-Match names.' }))
export type TrashedPlant = Static<typeof TrashedPlant>

export const TrashPage = component('TrashPage', Type.Object({
  items: Type.Array(ref(TrashedPlant), { description: 'Newest first.' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page.' })
}, { additionalProperties: false }))

export const TrashQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: TRASH_PAGE_MAX, default: TRASH_PAGE_DEFAULT, description: `Entries a page: 1–${TRASH_PAGE_MAX}, default ${TRASH_PAGE_DEFAULT}.` })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'The nextCursor of the previous page.' }))
}, { additionalProperties: false })
