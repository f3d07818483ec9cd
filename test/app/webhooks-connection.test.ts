import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { WebhookClient } from '../../src/webhooks/client.js'
import { heldRequests, type WebhookConnection } from '../../src/webhooks/connection.js'
import { receiver } from '../helpers/receiver.js'

// undici keeps finished requests in a connection's array until 256 have piled up; a webhook's
// connection lets go of them before each request (connection.ts, for the webhooks' memory target).

/** A client whose connections the test can look into. */
function watched (t: TestContext): { client: WebhookClient, connections: WebhookConnection[] } {
  const connections: WebhookConnection[] = []
  const client = new WebhookClient({ allowPrivate: true, timeoutMs: 10_000, onConnection: (c) => connections.push(c) })
  t.after(() => client.close())
  return { client, connections }
}

test('a connection to a receiver holds no finished requests: 300 deliveries in turn, at most the one in flight', async (t) => {
  const r = await receiver(t)
  const { client, connections } = watched(t)
  let most = 0
  for (let i = 0; i < 300; i++) {
    const sent = await client.post(r.url, Buffer.from(`{"seq":${i}}`), ['webhook-id', `1-${i}`])
    assert.equal(sent.error, null)
    for (const c of connections) {
      const held = heldRequests(c)
      // undefined: undici no longer names its array as this code expects; connection.ts needs a look.
      assert.notEqual(held, undefined, "undici's request array was not found on the connection")
      most = Math.max(most, held!)
    }
  }
  assert.equal(r.received.length, 300)
  assert.ok(connections.length >= 1, 'no connection seen')
  assert.ok(connections.length <= 4, 'connections kept alive (at most 4 an origin)')
  assert.ok(most <= 1, `a connection held ${most} requests`)
})

test('requests sent at once to one receiver are all answered, and the array starts afresh after them', async (t) => {
  const r = await receiver(t)
  const { client, connections } = watched(t)
  for (let round = 0; round < 3; round++) {
    const sent = await Promise.all(Array.from({ length: 40 }, async (_, i) => await client.post(r.url, Buffer.from('{}'), ['webhook-id', `${round}-${i}`])))
    assert.deepEqual(sent.map((s) => s.statusCode), sent.map(() => 204))
  }
  assert.equal(r.received.length, 120)
  await client.post(r.url, Buffer.from('{}'), ['webhook-id', 'last'])
  // The connection that took the last request started afresh before it: it holds that one alone.
  assert.ok(connections.some((c) => heldRequests(c) === 1), `held: ${connections.map((c) => heldRequests(c)).join(', ')}`)
})
