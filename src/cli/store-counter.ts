import type { WriteMeta } from '../catalogue/changes.js'
import { PlantNotFound } from '../catalogue/errors.js'
import { MOVEMENTS_PAGE_MAX, stockRefusalOf } from '../catalogue/stock.js'
import type { PlantStore } from '../store/plant-store.js'
import { pagesBefore } from './pages-before.js'
import type { StockCounter } from './target-interface.js'

// plants import --stock on a data folder or PostgreSQL: the levels, the ledger and the count
// movements, all through the store's stock (no SQL here: each engine's store answers).

/** `meta`: who the count movements are by (the cli actor). */
export function storeCounter (store: PlantStore, meta: WriteMeta): StockCounter {
  return {
    locations: async () => (await store.stock.locations()).map((l) => l.name),
    onHand: async (id) => {
      const plant = await store.get(id)
      if (plant === undefined || plant.stock === null) return null
      return new Map((await store.stock.levels(id) ?? []).map((l) => [l.location, l.onHand]))
    },
    ledger: (id) => pagesBefore((before, size) => store.stock.movements(id, before, size), MOVEMENTS_PAGE_MAX, (movement) => movement.seq),
    count: async (id, location, set, expected) => {
      try {
        await store.stock.move(id, { set, expected, reason: 'count', location }, undefined, undefined, meta)
        return undefined
      } catch (err) {
        const refusal = stockRefusalOf(err)
        if (refusal?.error === 'stock-changed') return `the count there is ${refusal.onHand} now, not ${expected} as read: a movement came between (a sale); nothing counted, run the import again to count over it`
        if (err instanceof PlantNotFound) return `plant ${id} was deleted while the import ran; nothing counted`
        if (refusal !== undefined) return `refused: ${(err as Error).message}`
        throw err
      }
    }
  }
}
