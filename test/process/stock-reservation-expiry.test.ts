import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { adminQuery, freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { send, startService, tempDir, type ServiceProcess } from '../helpers/process.js'

// A reservation outlives the instance that made it: killed with SIGKILL while it holds the
// expirer's lease and a reservation, another instance (PostgreSQL) or the same one restarted
// (SQLite) takes the lease once it runs out and releases the reservation when it is overdue.
// A ttl is at least 30 s: the test brings the expiry forward in the database instead of waiting.

const FAST = { RESERVATION_EXPIRY_POLL_MS: '50', RESERVATION_LEASE_MS: '1000' }

/** A plant holding `units` at main, and a reservation of `held` of them with the shortest ttl. */
async function holding (service: ServiceProcess, units: number, held: number): Promise<{ plant: number, reservation: string }> {
  const plant = (await send(service.url, { method: 'POST', path: '/v3/plant', body: { name: 'Fern' } })).json().id as number
  assert.equal((await send(service.url, { method: 'POST', path: `/v3/plant/${plant}/stock/movements`, body: { delta: units, reason: 'received' } })).status, 201)
  const reserved = await send(service.url, { method: 'POST', path: '/v3/reservations', body: { lines: [{ plant, quantity: held }], ttlSeconds: 30 } })
  assert.equal(reserved.status, 201, reserved.body)
  return { plant, reservation: reserved.json().id }
}

/** Waits (for a condition, not a time) until the plant holds nothing reserved; answers its record. */
async function released (service: ServiceProcess, plant: number): Promise<any> {
  for (;;) {
    const record = (await send(service.url, { method: 'GET', path: `/v3/plant/${plant}` })).json()
    if (record.stock.reserved === 0) return record
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function expiredBy (service: ServiceProcess, plant: number, reservation: string): Promise<void> {
  const record = await released(service, plant)
  assert.deepEqual([record.stock, record.status], [{ onHand: 5, reserved: 0, available: 5 }, 'available'])
  const read = (await send(service.url, { method: 'GET', path: `/v3/reservations/${reservation}` })).json()
  assert.equal(read.state, 'expired')
  const history = (await send(service.url, { method: 'GET', path: `/v3/plant/${plant}/history?limit=1` })).json().items
  assert.deepEqual([history[0].reason, history[0].actor], ['expire', 'expiry'])
}

test('PostgreSQL: the lease holder killed with SIGKILL holding a reservation; the other instance takes the lease over and releases it', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set',
  // Without a release the waits below never end: the test fails instead of hanging.
  timeout: 120_000
}, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const env = { DATABASE_URL: scratch.url, ...FAST }
  const first = await startService({ env })
  t.after(() => first.stop('SIGKILL'))
  // The expirer takes its lease when there is work: the first instance releases an overdue
  // reservation, and so holds the lease, before the second starts.
  const holder = async (): Promise<string | null> => (await adminQuery<{ owner: string | null }>(`SELECT owner FROM ${scratch.name}.leases WHERE name = 'reservation-expirer'`))[0].owner
  assert.equal(await holder(), null, 'an idle expirer takes no lease (it writes nothing)')
  const earlier = await holding(first, 5, 5)
  await adminQuery(`UPDATE ${scratch.name}.reservations SET expires_at = $1 WHERE id = $2`, [Date.now() - 1, earlier.reservation])
  await expiredBy(first, earlier.plant, earlier.reservation)
  const firstOwner = await holder()
  assert.notEqual(firstOwner, null)
  const second = await startService({ env })
  t.after(() => second.stop())
  const { plant, reservation } = await holding(first, 5, 5)
  assert.equal((await send(second.url, { method: 'GET', path: `/v3/plant/${plant}` })).json().status, 'sold')
  first.child.kill('SIGKILL')
  assert.equal((await first.exited).signal, 'SIGKILL')
  await adminQuery(`UPDATE ${scratch.name}.reservations SET expires_at = $1 WHERE id = $2`, [Date.now() - 1, reservation])
  await expiredBy(second, plant, reservation)
  assert.notEqual(await holder(), firstOwner, 'the second instance holds the lease now')
})

test('SQLite: after kill -9 the restarted service releases the reservation that fell overdue meanwhile', { timeout: 120_000 }, async (t) => {
  const dir = tempDir('plants-reservation-expiry')
  t.after(() => dir.remove())
  const first = await startService({ dataDir: dir.path, env: FAST })
  t.after(() => first.stop('SIGKILL'))
  const { plant, reservation } = await holding(first, 5, 5)
  first.child.kill('SIGKILL')
  assert.equal((await first.exited).signal, 'SIGKILL')
  const db = new Database(join(dir.path, 'catalogue.db'))
  db.prepare('UPDATE reservations SET expires_at = ? WHERE id = ?').run(Date.now() - 1, reservation)
  db.close()
  const restarted = await startService({ dataDir: dir.path, env: FAST })
  t.after(() => restarted.stop())
  await expiredBy(restarted, plant, reservation)
})
