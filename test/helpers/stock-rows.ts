import type { Reason } from '../../src/catalogue/stock.js'
import type { PlantStore } from '../../src/store/plant-store.js'

// Stock for the commands that carry it (export, import, migrate, backup, restore): locations, and
// movements made through the store's own movements, so the levels, totals and ledger agree.

export interface StockMove { plant: number, location: string, delta: number, reason: Exclude<Reason, 'count'>, reference: string | null }

export async function moveStock (store: PlantStore, movements: StockMove[], locations: string[] = ['greenhouse']): Promise<void> {
  for (const name of locations) await store.stock.addLocation(name)
  for (const m of movements) await store.stock.move(m.plant, { delta: m.delta, reason: m.reason, location: m.location, reference: m.reference ?? undefined }, undefined, undefined, { actor: 'till-1' })
}
