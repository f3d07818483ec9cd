// Records carry the store fields, times and version beside the seed's members; a test of the
// seed's behaviour compares what the seed's client sees, so a record made a moment later still equals.

/** The record without description, price, sku, barcode, stock, lowStockAt, createdAt, updatedAt and version. */
export function seedView (record: object): Record<string, unknown> {
  const { description, price, sku, barcode, stock, lowStockAt, createdAt, updatedAt, version, ...seed } = record as Record<string, unknown>
  return seed
}
