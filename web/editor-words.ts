import type { Plant } from './api.js'
import { money } from './money.js'
import { STATUS_LABELS } from './rows.js'

// The words of the open plant's outcomes: what a save did, and their version beside staff's.

/** What staff are told a save did, and what its Undo says: a sale, or a sold plant put back on sale, is named as one. */
export function outcome (plant: Plant, before: Partial<Plant>): { said: string, undone: string } {
  const fields = Object.keys(before)
  const sold = plant.status === 'sold' && before.status !== undefined
  const putBack = before.status === 'sold' && plant.status === 'available'
  if ((sold || putBack) && fields.length === 1) {
    return { said: `Marked “${plant.name}” as ${plant.status}.`, undone: `Undone: “${plant.name}” is ${(STATUS_LABELS[before.status!] ?? before.status!).toLowerCase()} again.` }
  }
  return { said: sold ? `Saved “${plant.name}” and marked it as sold.` : `Saved “${plant.name}”.`, undone: `Undone: “${plant.name}” is back as it was.` }
}

/** Their version of a plant, as the conflict panel lists it beside what staff typed. */
export function theirVersion (plant: Plant): Array<[string, string]> {
  return [
    ['Name', plant.name],
    ['Category', plant.category ?? '—'],
    ['Tags', plant.tags.length === 0 ? '—' : plant.tags.join(', ')],
    ['Status', STATUS_LABELS[plant.status] ?? plant.status],
    ['Price', money(plant.price) || '—'],
    ['SKU', plant.sku ?? '—'],
    ['Barcode', plant.barcode ?? '—'],
    ['Description', plant.description ?? '—'],
    ['Low stock at', plant.lowStockAt === null ? '—' : String(plant.lowStockAt)]
  ]
}
