import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Plant } from '../../src/catalogue/plant.js'
import type { Movement } from '../../src/catalogue/stock.js'
import { exportedAt, type ExportedAt } from '../../src/cli/import-base.js'
import { StockCounts } from '../../src/cli/import-stock.js'
import type { StockCounter } from '../../src/cli/target-interface.js'

// What plants import --stock plans for a row's stock cells, from the levels now and the ledger since
// the row's export, whatever the plant the import read earlier says of its last change.

const EXPORTED = '2026-11-27T12:00:00.000Z'
const plant: Plant = {
  id: 7,
  name: 'Fern',
  category: null,
  tags: [],
  status: 'available',
  description: null,
  price: null,
  sku: null,
  barcode: null,
  stock: { onHand: 9, reserved: 0, available: 9 },
  lowStockAt: null,
  photos: [],
  createdAt: '2026-11-01T09:00:00.000Z',
  updatedAt: EXPORTED,
  version: 3
}
const move = (seq: number, at: string, location: string, delta: number, reason: Movement['reason'], onHandAfter: number): Movement =>
  ({ seq, at, actor: 'till', location, delta, reason, reference: null, onHandAfter })

/** A catalogue whose Fern holds `levels` now, with `ledger` newest first, served `pageSize` movements a page. */
function counter (levels: Record<string, number>, ledger: Movement[], pageSize = 2): StockCounter {
  return {
    locations: async () => ['main', 'greenhouse'],
    onHand: async () => new Map(Object.entries(levels)),
    async * ledger () { for (let i = 0; i < ledger.length; i += pageSize) yield ledger.slice(i, i + pageSize) },
    count: async () => undefined
  }
}

const at = (time: string): ExportedAt => exportedAt(time) as ExportedAt

test('a sale made after the plant was read (its updatedAt still that of the export) is found in the ledger: the exported cell is left, an edited one refused', async () => {
  const ledger = [
    move(4, '2026-11-27T12:05:00.000Z', 'main', -1, 'sale', 8),
    move(3, '2026-11-27T12:04:00.000Z', 'greenhouse', 2, 'received', 2),
    move(2, EXPORTED, 'main', 4, 'received', 9),
    move(1, '2026-11-27T11:00:00.000Z', 'main', 5, 'received', 5)
  ]
  const counts = new StockCounts(counter({ main: 8, greenhouse: 2 }, ledger))
  await counts.start()
  const cells = (main: number, greenhouse: number): Array<{ column: string, location: string, value: number }> =>
    [{ column: 'stock.main', location: 'main', value: main }, { column: 'stock.greenhouse', location: 'greenhouse', value: greenhouse }]
  // As exported: main 9 (the received at the export's own time is before it), greenhouse none then (0).
  const kept = [{ column: 'stock.main', then: 9, now: 8, since: 'sold 1' }, { column: 'stock.greenhouse', then: 0, now: 2, since: 'received 2' }]
  assert.deepEqual(await counts.plan(2, plant, cells(9, 0), at(EXPORTED)), { line: 2, id: 7, name: 'Fern', changes: [], kept })
  const edited = await counts.plan(2, plant, cells(12, 2), at(EXPORTED))
  assert.equal(edited?.refused, 'stock.main moved since the export (sold 1): count it again (9 then, 8 now, 12 in the file; a new export holds the level now); nothing counted there')
  assert.deepEqual([edited?.changes, edited?.kept], [[], []], 'greenhouse 2 is the level now: nothing to do')
  // Kept to the second, the export's second holds the received: before it.
  assert.deepEqual((await counts.plan(2, plant, cells(9, 0), at('2026-11-27T12:00:00Z')))?.kept.map((k) => k.then), [9, 0])
  // Without updatedAt: each cell that differs from the level now is the count.
  assert.deepEqual((await counts.plan(2, plant, cells(9, 0), undefined))?.changes, [
    { column: 'stock.main', location: 'main', from: 8, to: 9 }, { column: 'stock.greenhouse', location: 'greenhouse', from: 2, to: 0 }
  ])
})

test('what happened since is said in a few words, oldest first', async () => {
  const ledger = [
    move(5, '2026-11-27T12:09:00.000Z', 'main', 1, 'return', 6),
    move(4, '2026-11-27T12:08:00.000Z', 'main', -2, 'damaged', 5),
    move(3, '2026-11-27T12:07:00.000Z', 'main', -2, 'count', 7),
    move(2, '2026-11-27T12:06:00.000Z', 'main', -1, 'correction', 9),
    move(1, '2026-11-27T12:05:00.000Z', 'main', -1, 'sale', 10)
  ]
  const counts = new StockCounts(counter({ main: 6 }, ledger))
  const planned = await counts.plan(3, plant, [{ column: 'stock.main', location: 'main', value: 20 }], at(EXPORTED))
  assert.match(planned?.refused ?? '', /^stock\.main moved since the export \(sold 1, correction -1, counted to 7, 2 damaged, 1 returned\): count it again \(0 then, 6 now, 20 in the file/)
})
