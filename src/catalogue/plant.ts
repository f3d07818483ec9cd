import type { Photo } from './photo.js'

// The catalogue's own words for a plant, spoken by the store, the routes and the commands alike.
// The HTTP schemas (plants/schemas.ts) are checked against these types (plants/schema-types.ts).

export const STATUSES = ['available', 'pending', 'sold'] as const
export type PlantStatus = typeof STATUSES[number]

/** The seed's fields of a plant. */
export interface SeedFields {
  name: string
  category: string | null
  tags: string[]
  status: PlantStatus
}

/** Store fields (catalogue/price-sku-barcode.ts): each optional in a request, null when not given. */
export interface StoreFields {
  description: string | null
  /** A decimal string (PRICE_PATTERN); the record shows it with 2 fraction digits. */
  price: string | null
  sku: string | null
  barcode: string | null
  /** Stock at or below this many available is low (lowStock=true, the stock.low event); null: never low. */
  lowStockAt: number | null
}

/** A plant's fields once validated and defaulted: what a create or a whole update writes. */
export interface PlantFields extends SeedFields, StoreFields {}

/** What a store's create and update take: store fields left out are null, as in a request. */
export type PlantInput = SeedFields & Partial<StoreFields>

export const completeFields = (fields: PlantInput): PlantFields => ({
  ...fields, description: fields.description ?? null, price: fields.price ?? null, sku: fields.sku ?? null, barcode: fields.barcode ?? null, lowStockAt: fields.lowStockAt ?? null
})

/** A tracked plant's totals over the store's locations (catalogue/stock.ts): available = onHand − reserved. */
export interface StockTotals {
  onHand: number
  reserved: number
  available: number
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
  description: string | null
  /** Always 2 fraction digits ("12.50"), or null when not priced. */
  price: string | null
  sku: string | null
  barcode: string | null
  /** Null when the plant does not track stock (its status set by hand); read-only, moved by stock movements. */
  stock: StockTotals | null
  lowStockAt: number | null
  photos: Photo[]
  /** RFC 3339, UTC, milliseconds; set by the service, updatedAt with every version. */
  createdAt: string
  updatedAt: string
  /**
   * The version its ETag `"<id>.<version>"` names, one more with every change: a list page gives a
   * client what If-Match and a batch's ifMatch need without reading each plant again.
   */
  version: number
}

/** A plant as the store hands it out: the record itself, version included. */
export type StoredPlant = Plant

/** The record a client sees (and the feed keeps), in the record's order, whatever else the value held. */
export const toRecord = ({ id, name, category, tags, status, description, price, sku, barcode, stock, lowStockAt, photos, createdAt, updatedAt, version }: Plant): Plant =>
  ({ id, name, category, tags, status, description, price, sku, barcode, stock: stock ?? null, lowStockAt: lowStockAt ?? null, photos: photos ?? [], createdAt, updatedAt, version })

/** The totals as their three columns hold them: null when the plant does not track stock. */
export const stockOf = (onHand: number | null, reserved: number | null, available: number | null): StockTotals | null =>
  onHand === null || onHand === undefined ? null : { onHand: Number(onHand), reserved: Number(reserved ?? 0), available: Number(available ?? 0) }

/** The number of plants of each status, and the units the plants that track stock hold (the trash's count nowhere). */
export type Inventory = Record<PlantStatus, number> & { units: StockTotals }

/** An inventory of an empty catalogue. */
export const emptyInventory = (): Inventory => ({ available: 0, pending: 0, sold: 0, units: { onHand: 0, reserved: 0, available: 0 } })

/** The units' totals from the kept on-hand and reserved counters: every tracked plant holds onHand ≥ reserved. */
export const unitsOf = (onHand: number, reserved: number): StockTotals => ({ onHand, reserved, available: onHand - reserved })
