import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pino from 'pino'
import { WebhookDeliverer } from '../../src/webhooks/deliverer.js'
import { PAIRS } from '../helpers/listen.js'
import { receiver, until, type Receiver } from '../helpers/receiver.js'

// Two instances on one database: each change is delivered by one of them (the one holding the
// webhook's lease), and when that one dies mid-delivery the other takes over once the lease expires.

const silent = pino({ level: 'silent' })
const plant = (name: string) => ({ name, category: null, tags: [], status: 'available' as const })
const seqs = (r: Receiver): number[] => r.received.map((x) => JSON.parse(x.body).seq)

for (const [engine, pair] of Object.entries(PAIRS)) {
  describe(`webhooks on two instances (${engine})`, { skip: pair.skip }, () => {
    test('one instance delivers each change; killed mid-delivery, the other takes over: nothing skipped, in order', async (t) => {
      const stores = await pair.open(t)
      const r = await receiver(t)
      const deliverers = stores.map((store) => new WebhookDeliverer(store, silent, { allowPrivate: true, retryDelayMs: () => 10, timeoutMs: 2_000, leaseMs: 600 }))
      t.after(async () => { for (const d of deliverers) await d.close() })
      const webhook = await stores[0].webhooks.create({ url: r.url, events: ['created', 'updated', 'deleted'], secret: 'whsec_' + Buffer.alloc(32, 7).toString('base64') }, Date.now())
      for (const d of deliverers) d.start()
      for (let i = 0; i < 10; i++) await stores[i % 2].create(plant(`Plant ${i}`))
      await until('ten delivered', () => r.received.length >= 10)
      const first = seqs(r)
      assert.deepEqual(first, [...first].sort((a, b) => a - b))
      assert.equal(new Set(first).size, first.length, 'no change twice without a crash')
      // Whoever holds the lease is killed while its receiver is not answering.
      const holder = deliverers.findIndex((d) => (d.running.get(webhook.id)?.cursor ?? 0) > 0)
      assert.ok(holder >= 0)
      r.answers = ['hang']
      await stores[0].create(plant('In flight'))
      await until('the in-flight attempt arrived', () => r.received.length === 11)
      deliverers[holder].abandon()
      for (let i = 0; i < 5; i++) await stores[1 - holder].create(plant(`After ${i}`))
      await until('the other instance delivered the rest', () => new Set(seqs(r)).size === 16)
      const all = seqs(r)
      const distinct = [...new Set(all)]
      assert.deepEqual(distinct, [...distinct].sort((a, b) => a - b), 'in order')
      assert.equal(distinct[distinct.length - 1] - distinct[0] + 1, 16, 'nothing skipped')
      const duplicates = all.length - distinct.length
      assert.ok(duplicates <= 1, `only the change in flight may come twice (came ${duplicates} times more)`)
      t.diagnostic(`duplicates after the kill: ${duplicates}`)
    })
  })
}
