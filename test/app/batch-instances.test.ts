import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BatchRefused } from '../../src/catalogue/batch.js'
import { VersionMismatch } from '../../src/catalogue/errors.js'
import { PAIRS } from '../helpers/listen.js'

// A batch on one instance racing single writes on the same plants on another (two stores on one
// database): no write is lost, and a batch's ifMatch is honoured against what the other committed.

const ROUNDS = 10
const PLANTS = 20

for (const [engine, pair] of Object.entries(PAIRS)) {
  describe(`a batch racing single writes across two instances on ${engine}`, { skip: pair.skip }, () => {
    test(`a batch of price patches and single status patches of the same plants: both kept on every plant (${ROUNDS} rounds)`, async (t) => {
      const [a, b] = await pair.open(t)
      const ids: number[] = []
      for (let i = 0; i < PLANTS; i++) ids.push((await a.create({ name: `plant ${i}`, category: null, tags: [], status: 'available' })).plant.id)
      for (let round = 1; round <= ROUNDS; round++) {
        const status = round % 2 === 0 ? 'sold' : 'pending'
        await Promise.all([
          a.batch(ids.map((id) => ({ op: 'patch', id, patch: { price: `${round}` } }))),
          ...ids.map((id) => b.patch(id, { status }))
        ])
        for (const plant of await b.list({ afterId: 0, limit: PLANTS })) {
          assert.deepEqual([plant.price, plant.status], [`${round}.00`, status], `round ${round}, plant ${plant.id}`)
        }
      }
      // Every write made a version: 1 + 2 a round.
      for (const plant of await a.list({ afterId: 0, limit: PLANTS })) assert.equal(plant.version, 1 + 2 * ROUNDS)
    })

    test(`a batch with ifMatch racing a single write of one of its plants: applied whole before it, or refused whole (${ROUNDS} rounds)`, async (t) => {
      const [a, b] = await pair.open(t)
      const ids: number[] = []
      for (let i = 0; i < 5; i++) ids.push((await a.create({ name: `plant ${i}`, category: null, tags: [], status: 'available' })).plant.id)
      const outcomes = { applied: 0, refused: 0 }
      for (let round = 1; round <= ROUNDS; round++) {
        const versions = new Map((await a.list({ afterId: 0, limit: 5 })).map((p) => [p.id, p.version]))
        const price = `${round}`
        const [batch, single] = await Promise.allSettled([
          a.batch(ids.map((id) => ({ op: 'patch', id, patch: { price }, expectedVersions: [versions.get(id)!] }))),
          b.patch(ids[round % ids.length], { name: `renamed ${round}` })
        ])
        assert.equal(single.status, 'fulfilled', 'the single write has no condition')
        const now = await b.list({ afterId: 0, limit: 5 })
        if (batch.status === 'fulfilled') {
          outcomes.applied++
          assert.ok(now.every((p) => p.price === `${round}.00`))
        } else {
          outcomes.refused++
          assert.ok(batch.reason instanceof BatchRefused, String(batch.reason))
          assert.deepEqual(batch.reason.refusals.map((r) => [r.index, r.error instanceof VersionMismatch]), [[round % ids.length, true]])
          assert.ok(now.every((p) => p.price !== `${round}.00`), 'nothing of a refused batch is applied')
        }
        assert.equal(now.find((p) => p.id === ids[round % ids.length])!.name, `renamed ${round}`, 'the single write is never lost')
      }
      assert.equal(outcomes.applied + outcomes.refused, ROUNDS)
    })
  })
}
