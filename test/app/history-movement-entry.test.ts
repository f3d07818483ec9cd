import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fieldChanges, movementEntry, type FieldChanges, type MovementAbout } from '../../src/catalogue/history.js'
import type { Plant, StockTotals } from '../../src/catalogue/plant.js'

// A movement's history entry is written by hand from the two fields a movement changes
// (movementEntry): its text must be exactly what JSON.stringify of the changes found by comparing
// every field writes, with the reason and the rest beside them, as every entry stored before was.

const movementChanges = (changes: FieldChanges, reason: string, about: MovementAbout): string => JSON.stringify({ ...changes, reason, ...about })

const plant = (stock: StockTotals | null, status: string): Plant => ({
  id: 7,
  name: 'Monstera "Thai"',
  category: 'indoor',
  tags: ['shade', 'pet safe'],
  status,
  description: 'A plant',
  price: '12.50',
  sku: 'M-1',
  barcode: null,
  stock,
  lowStockAt: 3,
  photos: [{ id: 'p1' } as Plant['photos'][number]],
  createdAt: '2026-11-30T07:00:00.000Z',
  updatedAt: '2026-11-30T07:00:00.000Z',
  version: 4
})

test('a movement\'s entry is the text the field-by-field comparison writes, for every kind of movement', () => {
  const totals = (onHand: number, reserved: number): StockTotals => ({ onHand, reserved, available: Math.max(0, onHand - reserved) })
  const cases: Array<[Plant, Plant]> = [
    [plant(totals(10, 0), 'available'), plant(totals(9, 0), 'available')], // a sale
    [plant(totals(1, 0), 'available'), plant(totals(0, 0), 'sold')], // the last one: status follows
    [plant(totals(0, 0), 'sold'), plant(totals(5, 0), 'available')], // received
    [plant(null, 'pending'), plant(totals(4, 0), 'pending')], // the first movement: tracking starts
    [plant(totals(3, 2), 'available'), plant(totals(2, 2), 'available')], // available stays 0 when reserved holds the rest
    [plant(totals(5, 0), 'available'), plant(totals(5, 0), 'available')] // nothing moved (a count to the same level)
  ]
  for (const [before, after] of cases) {
    for (const about of [{ location: 'main' }, { location: 'green "house" \\ 2' }, {}]) {
      for (const reason of ['sale', 'count', 'received']) {
        const after2 = { ...after, version: before.version + 1, updatedAt: '2026-11-30T07:00:01.000Z' }
        assert.equal(movementEntry(before, after2, reason, about), movementChanges(fieldChanges(before, after2), reason, about), JSON.stringify({ before, after2, reason, about }))
      }
    }
  }
})

test('a reservation step\'s places and reservation are written as the comparison writes them', () => {
  const before = plant({ onHand: 5, reserved: 0, available: 5 }, 'available')
  const after = { ...plant({ onHand: 5, reserved: 3, available: 2 }, 'available'), version: 5 }
  for (const about of [{ reservation: 'r-1', places: [{ location: 'main', quantity: 1 }, { location: 'shop', quantity: 2 }] }, { reservation: 'r-2', location: undefined }]) {
    assert.equal(movementEntry(before, after, 'reserve', about), movementChanges(fieldChanges(before, after), 'reserve', about))
  }
})
