import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { SkuTaken } from '../../src/catalogue/errors.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { PAIRS } from '../helpers/listen.js'

// A SKU is unique ignoring case across the catalogue, also when two instances (two stores on one
// database) take it at the same moment: exactly one create wins, the other is refused naming it.

const ROUNDS = 20

/** Each round, both stores create a plant with one SKU (in two cases) at once; neither waits for the other. */
async function race (stores: PlantStore[], round: number, write: (store: PlantStore, sku: string) => Promise<number>): Promise<void> {
  const skus = [`RACE-${round}`, `race-${round}`]
  const settled = await Promise.allSettled(stores.map((store, i) => write(store, skus[i])))
  const won = settled.filter((s): s is PromiseFulfilledResult<number> => s.status === 'fulfilled')
  const lost = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected')
  assert.equal(won.length, 1, `round ${round}: ${JSON.stringify(settled.map((s) => s.status === 'rejected' ? String(s.reason) : s.value))}`)
  assert.ok(lost[0].reason instanceof SkuTaken, String(lost[0].reason))
  assert.equal(lost[0].reason.holder, won[0].value, 'the refusal names the winner')
}

for (const [engine, pair] of Object.entries(PAIRS)) {
  describe(`SKU races between two instances on ${engine}`, { skip: pair.skip }, () => {
    test(`two creates with one SKU (ignoring case): exactly one wins, the other is 409 naming it (${ROUNDS} rounds)`, async (t) => {
      const stores = await pair.open(t)
      for (let round = 0; round < ROUNDS; round++) {
        await race(stores, round, async (store, sku) => (await store.create({ name: `racer ${sku}`, category: null, tags: [], status: 'available', sku })).plant.id)
      }
      const skus = (await stores[0].list({ afterId: 0, limit: 1000 })).map((p) => p.sku!.toLowerCase())
      assert.equal(skus.length, ROUNDS)
      assert.equal(new Set(skus).size, ROUNDS, 'one plant a SKU')
    })

    test('two patches giving two plants one SKU at once: exactly one wins', async (t) => {
      const stores = await pair.open(t)
      for (let round = 0; round < ROUNDS; round++) {
        const created = await Promise.all([0, 1].map(async (i) => (await stores[0].create({ name: `plant ${round} ${i}`, category: null, tags: [], status: 'available' })).plant.id))
        await race(stores, round, async (store, sku) => (await store.patch(created[stores.indexOf(store)], { sku })).id)
      }
    })
  })
}
