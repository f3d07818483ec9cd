import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { IdempotencyKeyReused } from '../../src/catalogue/errors.js'
import { PAIRS } from '../helpers/listen.js'

// A till that retries a request after a timeout may reach another instance of the service (another
// worker on the same SQLite file, another instance on the same PostgreSQL database): its
// Idempotency-Key must be found there as it would be where it was first used.

const fields = (name: string) => ({ name, category: null, tags: [], status: 'available' as const })

for (const [engine, pair] of Object.entries(PAIRS)) {
  describe(`an Idempotency-Key used on one instance and retried on another (${engine})`, { skip: pair.skip }, () => {
    test('a sale retried on the other instance is answered as made, and sells once', async (t) => {
      const [a, b] = await pair.open(t)
      const { plant } = await a.create(fields('Monstera'))
      await a.stock.move(plant.id, { delta: 10, reason: 'received' })
      for (let i = 0; i < 5; i++) {
        const claim = { key: `till-1:${i}`, requestHash: `sale ${i}` }
        const first = await a.stock.move(plant.id, { delta: -1, reason: 'sale' }, claim)
        const again = await b.stock.move(plant.id, { delta: -1, reason: 'sale' }, claim)
        assert.equal(first.replayed, false)
        assert.equal(again.replayed, true, `sale ${i}: the retry on the other instance is a replay`)
        assert.equal(again.movement.seq, first.movement.seq)
        await assert.rejects(b.stock.move(plant.id, { delta: -2, reason: 'sale' }, { key: claim.key, requestHash: 'another request' }), IdempotencyKeyReused)
      }
      assert.deepEqual((await b.stock.levels(plant.id))?.map((l) => l.onHand), [5], 'five sales, each once')
      assert.equal((await b.stock.movements(plant.id, undefined, 20))?.length, 6, 'the ledger: the delivery and five sales')
    })

    test('a create retried on the other instance answers the same plant, and adds one', async (t) => {
      const [a, b] = await pair.open(t)
      const claim = { key: 'shop-front:42', requestHash: 'create Fern' }
      const first = await a.create(fields('Fern'), claim)
      const again = await b.create(fields('Fern'), claim)
      assert.deepEqual([first.replayed, again.replayed], [false, true])
      assert.equal(again.plant.id, first.plant.id)
      assert.equal((await b.list({ afterId: 0, limit: 10 })).length, 1)
    })
  })
}
