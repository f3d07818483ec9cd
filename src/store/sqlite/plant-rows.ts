import { stockOf, type PlantStatus, type StoredPlant } from '../../catalogue/plant.js'
import { formatCents, timestamp } from '../../catalogue/price-sku-barcode.js'

// A plant's row as SQLite reads it, and the plant it is: the one mapping, for the store and the commands.

/** The columns a plant is read with, in PlantTuple's order. */
export const PLANT_COLUMNS = 'p.id, p.name, p.category, p.tags, p.status, p.version, p.photos, p.description, p.price, p.sku, p.barcode, p.created_at, p.updated_at, p.low_stock_at, p.on_hand, p.reserved, p.available'

/** PLANT_COLUMNS as an array (price in cents, times in epoch milliseconds), then any further column. */
export type PlantTuple = [number, string, string | null, string, PlantStatus, number, string, string | null, number | null, string | null, string | null, number, number, number | null, number | null, number | null, number | null]

// A page is read as arrays: better-sqlite3 builds no keyed object per row (a third of a page's read time).
export const tupleToPlant = ([id, name, category, tags, status, version, photos, description, price, sku, barcode, createdAt, updatedAt, lowStockAt, onHand, reserved, available]: PlantTuple): StoredPlant => ({
  id,
  name,
  category,
  tags: JSON.parse(tags),
  status,
  description,
  price: price === null ? null : formatCents(price),
  sku,
  barcode,
  stock: stockOf(onHand, reserved, available),
  lowStockAt,
  photos: JSON.parse(photos),
  createdAt: timestamp(createdAt),
  updatedAt: timestamp(updatedAt),
  version
})
