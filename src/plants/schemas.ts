import { Type, type Static } from '@sinclair/typebox'
import { STATUSES, type PlantStatus } from '../catalogue/plant.js'
import { SORTS, type Sort } from '../catalogue/query.js'
import { GTIN_PATTERN, PRICE_PATTERN, SKU_PATTERN } from '../catalogue/price-sku-barcode.js'
import { component, ref } from '../http/schemas/components.js'
import { FREE_TEXT_PATTERN, LABEL_PATTERN, LABEL_RULE, TEXT_PATTERN, TEXT_RULE } from '../http/problems/messages.js'
import { Id, Plant, StockTotals } from './record.js'

// The plant resource on the wire: these schemas validate requests, serialise responses and
// generate the OpenAPI document. Their types are the catalogue's (src/catalogue/), checked to
// be the same at compile time (schema-types.ts), so the two cannot drift.
// A schema clients should know by name is a component (see src/http/schemas/components.ts for the pattern).
// The stored plant itself, which photos and the feed send too, is record.ts's.

const Status = Type.Unsafe<PlantStatus>({ type: 'string', enum: [...STATUSES], description: 'Sale status of the plant.' })
// Text is stored exactly as sent, so what cannot be (a lone UTF-16 surrogate) or would look like
// another value (white space at either end) is refused: the one rule of TEXT_PATTERN.
const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: TEXT_PATTERN,
  description: `Name of the plant: 1–200 characters, ${TEXT_RULE}.`
})
const Category = Type.Unsafe<string | null>({
  type: ['string', 'null'], minLength: 1, maxLength: 100, pattern: LABEL_PATTERN, description: `Free-form category, 1–100 characters, ${LABEL_RULE}; or null.`
})
const Tag = Type.String({ minLength: 1, maxLength: 50, pattern: LABEL_PATTERN, description: `A label, 1–50 characters, ${LABEL_RULE}.` })
const Tags = Type.Array(Tag, {
  maxItems: 20,
  uniqueItems: true,
  'x-distinct-ignoring-case': true,
  description: 'Up to 20 distinct labels, distinct also ignoring the case of A–Z (as tag filters compare them: "BIG" and "big" together are refused).'
})
// Store fields (catalogue/price-sku-barcode.ts holds their rules). A price is a string so that no binary
// float ever holds it: a JSON number, even 3, is refused.
const PRICE_MESSAGE = 'must be a decimal string ≥ 0 and < 1000000000 with at most 2 fraction digits, such as "12" or "12.50" (no sign, exponent, spaces or leading zeros)'
const SKU_MESSAGE = 'must be 1–64 characters of A–Z, a–z, 0–9, ".", "_" and "-"'
const GTIN_MESSAGE = 'must be a GTIN: 8, 12, 13 or 14 digits'
const Description = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  minLength: 1,
  maxLength: 2000,
  pattern: FREE_TEXT_PATTERN,
  description: 'Text for a shop front, 1–2,000 characters, stored exactly as sent (white space at either end included; white space alone is refused); or null.'
})
const Price = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  pattern: PRICE_PATTERN,
  'x-pattern-message': PRICE_MESSAGE,
  'x-type-fix': 'send the price as a decimal string, e.g. "12.50"',
  description: 'Price in the catalogue\'s currency (GET /v3 names it) as a decimal string ≥ 0 and < 1,000,000,000 with at most 2 fraction digits ' +
    '("12", "12.5"); or null (not priced). The record shows 2 fraction digits ("12.50"). A JSON number is refused.'
})
const Sku = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  pattern: SKU_PATTERN,
  'x-pattern-message': SKU_MESSAGE,
  description: 'Stock keeping unit: 1–64 characters of A–Z a–z 0–9 . _ -, unique in the catalogue ignoring case (another plant\'s → 409 sku-taken naming it); or null.'
})
const Barcode = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  pattern: GTIN_PATTERN,
  'x-pattern-message': GTIN_MESSAGE,
  'x-gtin': true,
  description: 'GTIN (EAN-8, UPC-A, EAN-13 or GTIN-14): 8, 12, 13 or 14 digits with a valid check digit; or null. Kept as written; barcode= finds it at any length (zeros on the left). Not unique: identical plants may share one.'
})

const LowStockAt = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  minimum: 0,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'Stock is low when its available units are at or below this (lowStock=true finds it); null: never low.'
})

// The fields a client sends; absent optional fields take the defaults (PUT replaces the whole plant).
const fields = {
  name: Name,
  category: Type.Optional({ ...Category, default: null }),
  tags: Type.Optional({ ...Tags, default: [] }),
  status: Type.Optional({ ...Status, default: 'available' }),
  description: Type.Optional({ ...Description, default: null }),
  price: Type.Optional({ ...Price, default: null }),
  sku: Type.Optional({ ...Sku, default: null }),
  barcode: Type.Optional({ ...Barcode, default: null }),
  lowStockAt: Type.Optional({ ...LowStockAt, default: null })
}

export const NewPlant = component('NewPlant', Type.Object(fields, {
  additionalProperties: false,
  description: 'Details of the plant to add. Unknown members (an id included) and members given twice are invalid input.'
}))
export const PlantUpdate = component('PlantUpdate', Type.Object({ id: Id, ...fields }, {
  additionalProperties: false,
  description: 'Updated details of the plant, named by id. Omitted optional fields take their defaults. A member given twice is invalid input; an id written with a fraction or exponent (1.0, 1e2) is an invalid id.'
}))

// A JSON merge patch (RFC 7396): members present are changed, absent ones kept; `category: null`
// removes the category; null for any other member is invalid (a plant always has them).
export const PlantPatch = component('PlantPatch', Type.Object({
  name: Type.Optional(Name),
  category: Type.Optional(Category),
  tags: Type.Optional(Tags),
  status: Type.Optional(Status),
  description: Type.Optional(Description),
  price: Type.Optional(Price),
  sku: Type.Optional(Sku),
  barcode: Type.Optional(Barcode),
  lowStockAt: Type.Optional(LowStockAt)
}, {
  additionalProperties: false,
  description: 'A JSON merge patch (RFC 7396) of a plant: only the members sent change; `{}` changes nothing. An id or unknown member is invalid input.'
}))
export type PlantPatch = Static<typeof PlantPatch>

export const Inventory = component('Inventory', Type.Object({
  available: Type.Integer({ minimum: 0 }),
  pending: Type.Integer({ minimum: 0 }),
  sold: Type.Integer({ minimum: 0 }),
  units: { ...ref(StockTotals), description: 'The units held by the plants that track stock, summed (a plant in the trash counts nowhere).' }
}, { description: 'The number of plants of each status and the units of stock they hold, exact at one moment.' }))

export type NewPlant = Static<typeof NewPlant>
/** A plant's fields once validated and defaulted. */
export type PlantFields = Required<NewPlant>
export type PlantUpdate = Static<typeof PlantUpdate>

export const PlantPage = component('PlantPage', Type.Object({
  items: Type.Array(ref(Plant)),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page.' })
}, { description: 'One page of plants in the order asked for.' }))

/** The list's page size when the client names none. */
export const PAGE_SIZE = 50

export const ListQuery = Type.Object({
  status: Type.Optional(Type.Array(Status, { maxItems: 3, description: 'Repeat to accept any of the statuses given.' })),
  tag: Type.Optional(Type.Array(Tag, { maxItems: 20, description: 'Repeat to require every tag given. Ignores the case of A–Z: tag=Big finds "big" (not of other letters: "É" is not "é").' })),
  category: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 100,
    pattern: TEXT_PATTERN,
    description: 'Plants of this category, ignoring the case of A–Z: category=Indoor finds "indoor" (not of other letters: "É" is not "é").'
  })),
  q: Type.Optional(Type.String({
    maxLength: 100,
    description: 'Search by name: up to 5 terms separated by white space (an empty q, or one of white space alone, searches for nothing: as no q); a plant matches when its name holds every term, ignoring case ' +
      '(JavaScript toLowerCase), compatibility forms and accents (both sides folded by the Unicode compatibility decomposition NFKD and stripped of its combining marks: ' +
      '"cafe" and "CAFÉ" find "Café", "ficus" finds the full-width "ｆｉｃｕｓ" and the ligature "ﬁcus"; a letter without a decomposition stays itself: "o" does not find "ø"). A term of 3 or more characters matches anywhere in the name ' +
      '("stera" finds "Monstera"); a term of 1–2 characters matches the start of a word, a word being a run of letters and digits ' +
      '("zz" finds "ZZ plant", "21 cm" finds "Ficus, 21 cm pot", "cm" does not find "21cm"). Control characters (U+0000–U+001F, ' +
      'U+007F–U+009F) other than white space are refused, as is a term of accents alone.'
  })),
  sku: Type.Optional(Type.String({ pattern: SKU_PATTERN, 'x-pattern-message': SKU_MESSAGE, description: 'The plant with this SKU, ignoring case.' })),
  barcode: Type.Optional(Type.String({ pattern: GTIN_PATTERN, 'x-pattern-message': GTIN_MESSAGE, 'x-gtin': true, description: 'Plants whose barcode is this GTIN at any length: a UPC-A (12 digits), the same code as an EAN-13 with a leading 0 or as a GTIN-14 with leading zeros, and a GTIN-8 and its longer forms find each other. Records show each barcode as it was written.' })),
  updatedSince: Type.Optional(Type.String({
    maxLength: 64,
    description: 'Plants whose updatedAt is at or after this RFC 3339 date-time (seconds and a zone required, e.g. 2026-05-01T12:00:00.000Z; ' +
      'a + in an offset sent as %2B, though a space before an offset at the end is read as the + it was). A time that does not exist ' +
      '(30 February, a second 60 other than a leap second) is refused. Deleted plants are not listed: a till follows the change feed for deletions.'
  })),
  priceMin: Type.Optional(Type.String({ pattern: PRICE_PATTERN, 'x-pattern-message': PRICE_MESSAGE, description: 'Plants priced at least this (inclusive); unpriced plants are left out.' })),
  priceMax: Type.Optional(Type.String({ pattern: PRICE_PATTERN, 'x-pattern-message': PRICE_MESSAGE, description: 'Plants priced at most this (inclusive); unpriced plants are left out. Below priceMin: 400 naming both.' })),
  inStock: Type.Optional(Type.Boolean({ description: 'true: plants with stock available (> 0); false: plants that track stock and have none available. Plants that do not track stock match neither.' })),
  lowStock: Type.Optional(Type.Literal(true, { description: 'true: plants that track stock with available at or below their lowStockAt.' })),
  sort: Type.Optional(Type.Unsafe<Sort>({
    type: 'string',
    enum: [...SORTS],
    default: 'id',
    description: '`name` orders names as people read them: case, accents and compatibility forms ignored, each run of digits by its value ' +
      '("6 cm" before "14 cm"; leading zeros only break a tie, fewer first), otherwise by Unicode code point, ties by id; `price` by price, unpriced plants last, ties by id; ' +
      '`updated` by updatedAt, ties by id; `available` by available stock, plants that do not track stock last, ties by id; `-` reverses both (so `-price` puts unpriced plants first, `-available` untracked ones).'
  })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: PAGE_SIZE, description: 'Plants a page: 1–500, default 50.' })),
  cursor: Type.Optional(Type.String({ maxLength: 2048, description: 'The nextCursor of the previous page, sent with the same sort and filters. A sort=name cursor made before names ordered as read (numbers by value) is refused: start again without one.' }))
}, { additionalProperties: false })
export type ListQuery = Static<typeof ListQuery>

export const IdParams = Type.Object({ id: Id })

export const WriteHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    pattern: '^[\\x21-\\x7E]{1,255}$',
    'x-pattern-message': 'must be 1–255 printable ASCII characters, without spaces',
    description: 'A retry with the same key and body returns the first response, marked Idempotent-Replayed: true, and creates nothing; ' +
      'the same key with another body is 422 saying when the key was used (keys kept 24 h from that use, scoped per API key).'
  }))
})
export const UpdateHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'Apply only if the plant still has this ETag (else 412).' }))
})
export const ReadHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String({ description: 'Answer 304 if the plant still has this ETag.' }))
})

/** A count is exact up to this many plants; beyond, it says so and stops counting (its cost bounded like a page's). */
export const COUNT_EXACT_UP_TO = 10_000

// The list's filters without its order and paging: a filter added to the list counts too.
export const CountQuery = Type.Omit(ListQuery, ['sort', 'limit', 'cursor'])
export type CountQuery = Static<typeof CountQuery>

export const PlantCount = component('PlantCount', Type.Object({
  count: Type.Integer({ minimum: 0, maximum: COUNT_EXACT_UP_TO, description: `The number of matching plants, at most ${COUNT_EXACT_UP_TO}.` }),
  exact: Type.Boolean({ description: `False when more than ${COUNT_EXACT_UP_TO} plants match: count is then ${COUNT_EXACT_UP_TO}, a lower bound.` })
}, { description: 'How many plants match a list\'s filters (for "1–20 of 240").' }))
