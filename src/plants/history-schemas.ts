import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { HISTORY_KINDS, HISTORY_PAGE_DEFAULT, HISTORY_PAGE_MAX, type HistoryKind } from '../catalogue/history.js'
import { component, ref } from '../http/schemas/components.js'

// A plant's history and its revert on the wire: the only source of their validation, types and document.

const pair = (value: TSchema, what: string) =>
  Type.Optional(Type.Array(value, { minItems: 2, maxItems: 2, description: `${what}: [before, after].` }))
const Text = Type.Union([Type.String(), Type.Null()])
const List = Type.Union([Type.Array(Type.String()), Type.Null()])
const Count = Type.Union([Type.Integer(), Type.Null()])
const Totals = Type.Union([Type.Object({ onHand: Type.Integer(), reserved: Type.Integer(), available: Type.Integer() }), Type.Null()])

export const FieldChanges = component('FieldChanges', Type.Object({
  name: pair(Text, 'The name'),
  category: pair(Text, 'The category'),
  tags: pair(List, 'The tags'),
  status: pair(Text, 'The status'),
  description: pair(Text, 'The description'),
  price: pair(Text, 'The price, as the record shows it ("12.50")'),
  sku: pair(Text, 'The SKU'),
  barcode: pair(Text, 'The barcode'),
  lowStockAt: pair(Count, 'The low-stock threshold'),
  stock: pair(Totals, 'The stock\'s totals (a movement; the movements list is the full ledger)'),
  photos: pair(List, 'The photos\' ids, in order')
}, {
  additionalProperties: false,
  description: 'Each field the version changed, with its value before and after. A new plant lists the fields it was given a value with, each from null; ' +
    'a revert the fields it gave back; a delete and a restore from the trash list none (the fields stay as they were).'
}))

export const HistoryEntry = component('HistoryEntry', Type.Object({
  version: Type.Integer({ minimum: 1, description: 'The version this change made: the ETag `"<id>.<version>"` it had.' }),
  at: Type.String({ description: 'When it was made (RFC 3339, UTC, milliseconds).' }),
  actor: Type.String({ description: 'Who made it: the API key\'s name, `anonymous` without one, `cli` for the `plants` command line.' }),
  kind: Type.Unsafe<HistoryKind>({
    type: 'string',
    enum: [...HISTORY_KINDS],
    description: 'What the version was: `created` (a new plant), `updated` (PUT, PATCH, a batch or import, photos added, removed or reordered), ' +
      '`reverted` (POST /v3/plant/{id}/revert: the feed says `updated`), `deleted` (moved to the trash), `restored` (from the trash: the feed says `created`). ' +
      'A revert made before reverts had a kind of their own stays `updated` (nothing told them apart); a restore made before is `restored`. ' +
      'A restore of the whole catalogue from a backup adds no version: the history is the backup\'s, its versions moved up with the plants\'.'
  }),
  changes: ref(FieldChanges),
  reason: Type.Optional(Type.String({ description: 'A stock movement\'s reason (received, sale, return, damaged, count, correction), or a reservation\'s step (reserve, release, expire; a commit\'s versions are sales): the version it made, with `stock` among its changes.' })),
  location: Type.Optional(Type.String({ description: 'The location a stock movement moved stock at (for a reservation\'s step, the place when the plant\'s lines in it name one; absent when they name several, which `places` then names, and for entries written before it was kept).' })),
  places: Type.Optional(Type.Array(Type.Object({
    location: Type.String({ description: 'A place the step held (or let go, or sold) the plant\'s units at.' }),
    quantity: Type.Integer({ minimum: 1, description: 'The plant\'s units of the step there: its lines at that place together.' })
  }, { additionalProperties: false }), {
    minItems: 2,
    description: 'A reservation\'s step whose lines hold the plant at several places: each place and its units, in the order the lines name them (`location` is then absent). Absent on every other entry, and on such steps written before it was kept.'
  })),
  reservation: Type.Optional(Type.String({ description: 'The reservation whose step (reserve, sale on its commit, release, expire) made the version (absent for entries written before it was kept).' })),
  quantity: Type.Optional(Type.Integer({
    minimum: 1,
    description: 'The units a stock movement or a reservation\'s step moved, a count (the reason says which way; for a count or a correction, `changes.stock` does): ' +
      'how far `onHand` moved (received, sale, return, damaged, count, correction; a commit\'s sales, all the plant\'s lines together), or `reserved` (reserve, release, expire). ' +
      'Present on every entry with a `reason` that moved units, older ones included (it is read from `changes.stock`), so a client need not work it out; `location` is the place.'
  }))
}, { additionalProperties: false, description: 'One version of a plant, as its history keeps it.' }))
export type HistoryEntry = Static<typeof HistoryEntry>

export const HistoryPage = component('HistoryPage', Type.Object({
  items: Type.Array(ref(HistoryEntry), { description: 'Newest first.' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next (older) page; null on the last page.' })
}, { additionalProperties: false }))

export const HistoryQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: HISTORY_PAGE_MAX, default: HISTORY_PAGE_DEFAULT, description: `Versions a page: 1–${HISTORY_PAGE_MAX}, default ${HISTORY_PAGE_DEFAULT}.` })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'The nextCursor of the previous page.' }))
}, { additionalProperties: false })

export const RevertBody = component('RevertBody', Type.Object({
  version: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The version whose fields the plant gets back (GET /v3/plant/{id}/history lists them).' }),
  status: Type.Optional(Type.Boolean({ description: 'true: the status goes back to that version\'s too. Without it (or false) the status stays as it is: a sale or a hold happened in the world.' }))
}, { additionalProperties: false, description: 'The version to go back to, and whether its status comes back too.' }))
export type RevertBody = Static<typeof RevertBody>
