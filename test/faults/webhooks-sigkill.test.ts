import assert from 'node:assert/strict'
import { test } from 'node:test'
import { send, startService, tempDir } from '../helpers/process.js'
import { receiver, until } from '../helpers/receiver.js'

// kill -9 while webhooks are being delivered, round after round on one data folder: every
// acknowledged change reaches the receiver at least once, each plant's in version order; the
// duplicates a crash leaves are counted and reported.

const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 20)
const WRITERS = 4
// A short lease, so that the restarted service takes the webhook over from the killed one within a second or so.
const ENV = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_LEASE_MS: '1000' }

test(`SIGKILL during webhook deliveries, ${ROUNDS} times: every acknowledged change delivered at least once, in version order per plant`, async (t) => {
  const dir = tempDir('plants-webhooks-sigkill')
  t.after(dir.remove)
  const r = await receiver(t)
  const acknowledged: Array<{ id: number, version: number }> = []
  let hookMade = false
  for (let round = 0; round <= ROUNDS; round++) {
    const service = await startService({ dataDir: dir.path, env: ENV })
    if (!hookMade) {
      const made = await send(service.url, { method: 'POST', path: '/v3/webhooks', body: { url: r.url } })
      assert.equal(made.status, 201, made.body)
      hookMade = true
    }
    if (round === ROUNDS) {
      // The last start is not killed: it delivers whatever is left.
      await until('every acknowledged change delivered', () => {
        const got = new Set(r.received.map((x) => { const c = JSON.parse(x.body); return `${c.id}:${c.version}` }))
        return acknowledged.every((a) => got.has(`${a.id}:${a.version}`))
      })
      await service.stop()
      break
    }
    let killed = false
    const delivered = r.received.length
    const writer = async (w: number): Promise<void> => {
      while (!killed) {
        const made = await send(service.url, { method: 'POST', path: '/v3/plant', body: { name: `r${round} w${w}` } }).catch(() => undefined)
        if (made?.status !== 200) return
        const { id } = made.json()
        acknowledged.push({ id, version: 1 })
        for (let version = 2; version <= 3 && !killed; version++) {
          const patched = await send(service.url, { method: 'PATCH', path: `/v3/plant/${id}`, body: { status: version === 2 ? 'pending' : 'sold' } }).catch(() => undefined)
          if (patched?.status !== 200) return
          acknowledged.push({ id, version })
        }
      }
    }
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w))
    // Killed while it delivers: once some of this round's deliveries arrived, at a random moment after.
    await until(`round ${round}: this round's changes being delivered`, () => r.received.slice(delivered).some((x) => JSON.parse(x.body).plant?.name.startsWith(`r${round} `)))
    await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 300)))
    killed = true
    service.child.kill('SIGKILL')
    assert.equal((await service.exited).signal, 'SIGKILL')
    await Promise.all(writers)
  }
  const perPlant = new Map<number, number[]>()
  const seen = new Set<string>()
  let duplicates = 0
  for (const { body } of r.received) {
    const change = JSON.parse(body)
    const key = `${change.id}:${change.version}`
    if (seen.has(key)) { duplicates++; continue }
    seen.add(key)
    perPlant.set(change.id, [...(perPlant.get(change.id) ?? []), change.version])
  }
  for (const [id, versions] of perPlant) assert.deepEqual(versions, [...versions].sort((a, b) => a - b), `plant ${id}: versions out of order`)
  const missing = acknowledged.filter((a) => !seen.has(`${a.id}:${a.version}`))
  assert.deepEqual(missing, [])
  t.diagnostic(`${ROUNDS} kills; ${acknowledged.length} changes acknowledged, all delivered (${r.received.length} deliveries, ${duplicates} duplicates after kills)`)
})
