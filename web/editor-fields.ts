import type { Plant } from './api.js'
import { byId } from './dom.js'
import { orNull, splitTags } from './form-text.js'
import { priceOf } from './money.js'

// The plant dialog's fields (editor.ts): their boxes, what staff typed in them as the record's
// values, and a record's values as the boxes show them.

export type Fields = Pick<Plant, 'name' | 'category' | 'tags' | 'status' | 'price' | 'sku' | 'barcode' | 'description' | 'lowStockAt'>
export const FIELDS = ['name', 'category', 'tags', 'status', 'price', 'sku', 'barcode', 'description', 'lowStockAt'] as const
export const EMPTY: Fields = { name: '', category: null, tags: [], status: 'available', price: null, sku: null, barcode: null, description: null, lowStockAt: null }

export const inputs = {
  name: byId<HTMLInputElement>('f-name'),
  category: byId<HTMLInputElement>('f-category'),
  tags: byId<HTMLInputElement>('f-tags'),
  status: byId<HTMLSelectElement>('f-status'),
  price: byId<HTMLInputElement>('f-price'),
  sku: byId<HTMLInputElement>('f-sku'),
  barcode: byId<HTMLInputElement>('f-barcode'),
  description: byId<HTMLTextAreaElement>('f-description'),
  lowStockAt: byId<HTMLInputElement>('f-lowStockAt')
}

/**
 * The low-stock threshold typed: a whole number, or null when empty. Anything else is sent as
 * typed, so the catalogue's refusal is shown beside the box like any other field's.
 */
function threshold (text: string): number | null {
  const t = text.trim()
  return t === '' ? null : /^\d{1,15}$/.test(t) ? Number(t) : t as unknown as number
}

/** What the boxes hold, as the record's values. */
export function values (): Fields {
  return {
    name: inputs.name.value,
    category: orNull(inputs.category.value),
    tags: splitTags(inputs.tags.value),
    status: inputs.status.value,
    price: priceOf(inputs.price.value),
    sku: orNull(inputs.sku.value),
    barcode: orNull(inputs.barcode.value.replace(/\s/g, '')),
    description: orNull(inputs.description.value),
    lowStockAt: threshold(inputs.lowStockAt.value)
  }
}

/** A field's value as its box shows it. */
export function shown (field: keyof Fields, plant: Fields): string {
  const value = plant[field]
  return Array.isArray(value) ? value.join(', ') : String(value ?? '')
}
