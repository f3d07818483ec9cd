import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { TEST_DATABASE_URL, freshSchema, postgresEngine, type Scratch } from '../helpers/postgres-engine.js'
import { DatabaseProxy, json, sleep, startInstance, timed, type Instance, type ProxyMode } from '../helpers/scale.js'

// The service process between clients and a PostgreSQL that refuses, or accepts and never answers.
// A TCP proxy plays the broken database, so the real server (which other tests use) keeps running.

const BOUND_MS = 2_000

/** Every kind of request gets 503 with Retry-After within the bound, and /readyz says 503 too. */
async function assertUnavailable (instance: Instance, id: number | undefined): Promise<void> {
  const requests: Array<[string, RequestInit]> = [
    ['/v3/plant', { method: 'POST', ...json({ name: 'During the outage' }) }],
    ['/v3/plant?limit=5', {}],
    ['/v3/plant/changes?after=0', {}],
    ['/readyz', {}]
  ]
  if (id !== undefined) {
    requests.push([`/v3/plant/${id}`, {}], ['/v3/plant', { method: 'PUT', ...json({ id, name: 'During' }) }], [`/v3/plant/${id}`, { method: 'DELETE' }])
  }
  const answers = await Promise.all(requests.map(([path, init]) => timed(`${instance.url}${path}`, init, 10_000)))
  answers.forEach((a, i) => {
    const what = `${requests[i][1].method ?? 'GET'} ${requests[i][0]}`
    assert.equal(a.res.status, 503, `${what}: ${a.res.status} ${JSON.stringify(a.body)}`)
    assert.ok(a.res.headers.get('retry-after'), `${what}: no Retry-After`)
    assert.ok(a.ms < BOUND_MS, `${what}: answered after ${Math.round(a.ms)} ms`)
    assert.match(a.res.headers.get('content-type') ?? '', /^application\/json/)
    assert.doesNotMatch(JSON.stringify(a.body), /SELECT|INSERT|at .*\.ts|postgres:\/\//i, `${what}: leaks ${JSON.stringify(a.body)}`)
    // Readiness names the cause for the operator; every other answer keeps it to itself.
    if (requests[i][0] !== '/readyz') assert.doesNotMatch(JSON.stringify(a.body), /ECONN/, `${what}: leaks ${JSON.stringify(a.body)}`)
  })
  assert.equal((await timed(`${instance.url}/healthz`)).res.status, 200) // alive all along
}

/** Service resumes by itself: wait (bounded) until a write succeeds again. */
async function assertRecovers (instance: Instance): Promise<number> {
  const until = Date.now() + 20_000
  for (;;) {
    const ready = await timed(`${instance.url}/readyz`)
    if (ready.res.status === 200) break
    assert.ok(Date.now() < until, 'not ready again within 20 s')
    await sleep(200)
  }
  const created = await timed(`${instance.url}/v3/plant`, { method: 'POST', ...json({ name: 'After the outage' }) })
  assert.equal(created.res.status, 200, JSON.stringify(created.body))
  assert.equal((await timed(`${instance.url}/v3/plant/${created.body.id}`)).res.status, 200)
  return created.body.id
}

describe('the service while PostgreSQL is unreachable', { skip: postgresEngine.skip, timeout: 300_000 }, () => {
  const target = TEST_DATABASE_URL ? new URL(TEST_DATABASE_URL) : undefined
  const services: Array<{ proxy: DatabaseProxy, instance: Instance, scratch: Scratch, start: ProxyMode }> = []

  before(async () => {
    // One service starts against a port that refuses, the other against a server that never answers.
    for (const start of ['refuse', 'freeze'] as const) {
      const proxy = await DatabaseProxy.start({ host: target!.hostname, port: Number(target!.port || 5432) })
      await proxy.set(start)
      const scratch = await freshSchema()
      const instance = await startInstance({ DATABASE_URL: proxy.rewrite(scratch.url) })
      services.push({ proxy, instance, scratch, start })
    }
  })

  after(async () => {
    for (const s of services) {
      await s.proxy.set('pass') // so the instance can close its connections cleanly
      await s.instance.stop()
      await s.proxy.close()
      await s.scratch.drop()
    }
  })

  it('starts with the database refusing, or silent, and answers 503 with Retry-After (and /readyz 503) without hanging', async () => {
    for (const { instance } of services) await assertUnavailable(instance, undefined)
  })

  it('recovers by itself, with no restart, when the database appears', async () => {
    for (const { proxy, instance } of services) {
      await proxy.set('pass')
      await assertRecovers(instance)
    }
  })

  it('a running service answers 503 while the database goes away or freezes mid-use, then recovers, and never exits', async () => {
    for (const { proxy, instance, start } of services) {
      // The other kind of outage this time, on a service that has warm connections.
      const { body: plant } = await timed(`${instance.url}/v3/plant`, { method: 'POST', ...json({ name: 'Warm' }) })
      await proxy.set(start === 'refuse' ? 'freeze' : 'refuse')
      await assertUnavailable(instance, plant.id)
      await assertUnavailable(instance, plant.id) // and again: nothing piles up
      await proxy.set('pass')
      await assertRecovers(instance)
      assert.equal(instance.child.exitCode, null, instance.output())
      assert.doesNotMatch(instance.output(), /uncaught|unhandled/i)
    }
  })
})
