import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Random movements, counts and reservations (reserve, commit, release, expire) against an in-memory
// model: each is applied or refused as the model says, and afterwards the levels, the totals, the
// status, the versions and the ledger are the model's.

const LOCATIONS = ['main', 'shop']
type Line = { plant: number, location: string, quantity: number }
type Command =
  | { kind: 'delta', plant: number, location: string, reason: 'received' | 'sale' | 'return' | 'damaged' | 'correction', amount: number }
  | { kind: 'count', plant: number, location: string, set: number, stale: boolean }
  | { kind: 'reserve', lines: Line[] }
  /** The n-th reservation made so far (modulo), committed or released. */
  | { kind: 'commit' | 'release', n: number }
  | { kind: 'expire' }

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('delta' as const),
    plant: fc.integer({ min: 0, max: 1 }),
    location: fc.constantFrom(...LOCATIONS),
    reason: fc.constantFrom('received' as const, 'sale' as const, 'return' as const, 'damaged' as const, 'correction' as const),
    amount: fc.integer({ min: 1, max: 6 })
  }),
  fc.record({ kind: fc.constant('count' as const), plant: fc.integer({ min: 0, max: 1 }), location: fc.constantFrom(...LOCATIONS), set: fc.integer({ min: 0, max: 12 }), stale: fc.boolean() }),
  fc.record({
    kind: fc.constant('reserve' as const),
    lines: fc.array(fc.record({ plant: fc.integer({ min: 0, max: 1 }), location: fc.constantFrom(...LOCATIONS), quantity: fc.integer({ min: 1, max: 4 }) }), { minLength: 1, maxLength: 3 })
  }),
  fc.record({ kind: fc.constantFrom('commit' as const, 'release' as const), n: fc.nat() }),
  fc.record({ kind: fc.constant('expire' as const) })
)

const SIGN = { received: 1, return: 1, sale: -1, damaged: -1, correction: -1 } as const

async function movement (api: TestApp, id: number, body: object): Promise<number> {
  return (await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body })).statusCode
}

for (const engine of ENGINES) {
  describe(`stock against a model on ${engine.name}`, { skip: engine.skip }, () => {
    test('random movements, counts and reservations agree with an in-memory model (levels, totals, status, versions, ledger)', async (t) => {
      let offset = 0
      // The expirer looks rarely: the model's `expire` steps run it by hand after moving the clock on.
      const api = await build(t, engine, { reservationExpiryPollMs: 600_000 }, { now: () => Date.now() + offset })
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })
      await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 25 }), async (commands) => {
        const ids = [(await api.add({ name: 'A' })).id as number, (await api.add({ name: 'B' })).id as number]
        const levels = ids.map(() => new Map<string, { onHand: number, reserved: number }>())
        const tracked = ids.map(() => false)
        const status = ids.map(() => 'available')
        const versions = ids.map(() => 1)
        const ledger = ids.map(() => 0)
        const reservations: Array<{ id: string, lines: Line[], open: boolean }> = []
        const levelOf = (plant: number, location: string) => levels[plant].get(location) ?? { onHand: 0, reserved: 0 }
        const available = (plant: number): number => [...levels[plant].values()].reduce((a, l) => a + l.onHand - l.reserved, 0)
        /** A new version of `plant`, its status following its available stock from `before`. */
        const versioned = (plant: number, before: number | null): void => {
          versions[plant]++
          const after = available(plant)
          if (status[plant] === 'pending') return
          if (after === 0 && (before === null || before > 0)) status[plant] = 'sold'
          else if (after > 0 && (before === null || before === 0) && status[plant] === 'sold') status[plant] = 'available'
        }
        /** Lets a reservation's units go (released or expired): one version a plant. */
        const letGo = (r: { lines: Line[] }): void => {
          const before = ids.map((_, p) => available(p))
          for (const l of r.lines) levelOf(l.plant, l.location).reserved -= l.quantity
          for (const p of new Set(r.lines.map((l) => l.plant))) versioned(p, before[p])
        }
        for (const c of commands) {
          if (c.kind === 'reserve') {
            const asked = new Map<string, number>()
            for (const l of c.lines) asked.set(`${l.plant} ${l.location}`, (asked.get(`${l.plant} ${l.location}`) ?? 0) + l.quantity)
            const short = c.lines.filter((l) => { const v = levelOf(l.plant, l.location); return asked.get(`${l.plant} ${l.location}`)! > v.onHand - v.reserved })
            const res = await api.request({ method: 'POST', url: '/v3/reservations', payload: { lines: c.lines.map((l) => ({ ...l, plant: ids[l.plant] })), ttlSeconds: 60 } })
            assert.equal(res.statusCode, short.length > 0 ? 409 : 201, `${JSON.stringify(c)}: ${res.body}`)
            if (short.length > 0) {
              assert.equal(res.json().lines.length, short.length)
              continue
            }
            const before = ids.map((_, p) => available(p))
            for (const l of c.lines) {
              const level = levelOf(l.plant, l.location)
              levels[l.plant].set(l.location, { ...level, reserved: level.reserved + l.quantity })
            }
            for (const p of new Set(c.lines.map((l) => l.plant))) versioned(p, before[p])
            reservations.push({ id: res.json().id, lines: c.lines, open: true })
            continue
          }
          if (c.kind === 'commit' || c.kind === 'release') {
            if (reservations.length === 0) continue
            const r = reservations[c.n % reservations.length]
            const res = c.kind === 'commit'
              ? await api.request({ method: 'POST', url: `/v3/reservations/${r.id}/commit` })
              : await api.request({ method: 'DELETE', url: `/v3/reservations/${r.id}` })
            assert.equal(res.statusCode, r.open ? (c.kind === 'commit' ? 200 : 204) : 410, `${JSON.stringify(c)}: ${res.body}`)
            if (!r.open) continue
            r.open = false
            if (c.kind === 'release') {
              letGo(r)
              continue
            }
            for (const l of r.lines) {
              const level = levelOf(l.plant, l.location)
              level.onHand -= l.quantity
              level.reserved -= l.quantity
              ledger[l.plant]++
            }
            // A commit leaves available, and so the status, as they were.
            for (const p of new Set(r.lines.map((l) => l.plant))) versions[p]++
            continue
          }
          if (c.kind === 'expire') {
            offset += 61_000
            while (await api.app.store.stock.expireReservations(100) === 100);
            for (const r of reservations.filter((r) => r.open)) {
              r.open = false
              letGo(r)
            }
            continue
          }
          // What is left is a movement: a delta or a count.
          const m = c as Extract<Command, { kind: 'delta' | 'count' }>
          const level = levelOf(m.plant, m.location)
          const before = tracked[m.plant] ? available(m.plant) : null
          let next: number
          let sent: object
          if (m.kind === 'count') {
            const expected = m.stale ? m.set + 1 : level.onHand
            sent = { set: m.set, expected, reason: 'count', location: m.location }
            next = expected === level.onHand ? m.set : -1
          } else {
            const delta = SIGN[m.reason] * m.amount
            sent = { delta, reason: m.reason, location: m.location }
            next = level.onHand + delta
          }
          const status409 = next < level.reserved
          assert.equal(await movement(api, ids[m.plant], sent), status409 ? 409 : 201, JSON.stringify(m))
          if (status409) continue
          levels[m.plant].set(m.location, { ...level, onHand: next })
          // A count that finds a tracked plant's level as it is makes no version (the ledger keeps it).
          if (next !== level.onHand || !tracked[m.plant]) versioned(m.plant, before)
          tracked[m.plant] = true
          ledger[m.plant]++
        }
        for (const [i, id] of ids.entries()) {
          const plant = (await api.request({ method: 'GET', url: `/v3/plant/${id}` })).json()
          const onHand = [...levels[i].values()].reduce((a, l) => a + l.onHand, 0)
          const reserved = [...levels[i].values()].reduce((a, l) => a + l.reserved, 0)
          assert.deepEqual(plant.stock, tracked[i] ? { onHand, reserved, available: onHand - reserved } : null)
          assert.equal(plant.status, status[i])
          assert.equal(plant.version, versions[i])
          const stock = (await api.request({ method: 'GET', url: `/v3/plant/${id}/stock` })).json().items
          assert.deepEqual(stock.map((l: { location: string, onHand: number, reserved: number }) => [l.location, l.onHand, l.reserved]),
            [...levels[i]].map(([location, l]) => [location, l.onHand, l.reserved]).sort(([a], [b]) => a < b ? -1 : 1))
          const rows = (await api.request({ method: 'GET', url: `/v3/plant/${id}/stock/movements?limit=100` })).json().items
          assert.equal(rows.length, ledger[i])
          assert.equal(rows.reduce((sum: number, m: { delta: number }) => sum + m.delta, 0), onHand)
        }
        for (const r of reservations) assert.equal((await api.request({ method: 'GET', url: `/v3/reservations/${r.id}` })).json().state === 'held', r.open)
      }), { numRuns: 15 })
    })
  })
}
