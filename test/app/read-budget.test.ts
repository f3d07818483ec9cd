import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig, type Config } from '../../src/config.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { sqliteEngine } from '../helpers/engines.js'
import { overriding } from '../helpers/overriding.js'

// Expensive reads (lists, searches, counts, feed, history and trash pages) share a budget per
// client: how many it may have running at once. Here the store holds every list, count and feed
// page until the test lets go, so what is running at once is exact.

const ENV_KEY = 'env-admin-key-0123456789'

async function heldApp (t: { after: (fn: () => unknown) => void }, config: Partial<Config>) {
  const inner = await sqliteEngine.open()
  let entered = 0
  let gate!: () => void
  let open = new Promise<void>((resolve) => { gate = resolve })
  const held = <A extends unknown[], R>(read: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    entered++
    await open
    return await read(...args)
  }
  const store = overriding<PlantStore>(inner, { list: held(inner.list.bind(inner)), count: held(inner.count.bind(inner)), changes: held(inner.changes.bind(inner)) })
  const app = await buildApp(testConfig(config), { store })
  t.after(async () => { await app.close(); await inner.close() })
  /** Resolves once `n` reads are held in the store. */
  const holding = async (n: number): Promise<void> => { while (entered < n) await new Promise((resolve) => setImmediate(resolve)) }
  const release = (): void => { gate(); open = Promise.resolve() }
  return { app, holding, release }
}

test('a client address may have READ_BUDGET expensive reads at once: one more is 429 with Retry-After, others are not held back, and slots come back', async (t) => {
  const { app, holding, release } = await heldApp(t, { readBudget: 2 })
  const get = (url: string, remoteAddress = '192.0.2.1') => app.inject({ method: 'GET', url, remoteAddress })
  const running = [get('/v3/plant?sort=name'), get('/v3/plant/count?category=ferns')]
  await holding(2)
  const refused = await get('/v3/plant/changes?after=0')
  assert.equal(refused.statusCode, 429, refused.body)
  assert.equal(refused.headers['retry-after'], '1')
  assert.equal(refused.json().type.endsWith('/too-many-requests'), true)
  assert.match(refused.json().detail, /At most 2 lists, counts, searches, feed or history pages at once per client address/)
  // Another address, and a cheap read from the same one, are not counted against it.
  const other = get('/v3/plant?sort=-price', '192.0.2.2')
  await holding(3)
  assert.equal((await get('/v3/plant/1')).statusCode, 404)
  release()
  for (const res of await Promise.all([...running, other])) assert.equal(res.statusCode, 200, res.body)
  // The slots were given back when the answers went.
  const again = await Promise.all([get('/v3/plant'), get('/v3/plant/count')])
  assert.deepEqual(again.map((r) => r.statusCode), [200, 200])
})

test('a client with an API key has four times the address budget, counted by its key', async (t) => {
  const { app, holding, release } = await heldApp(t, { readBudget: 1, apiKeys: [ENV_KEY] })
  const keyed = (remoteAddress: string) => app.inject({ method: 'GET', url: '/v3/plant', remoteAddress, headers: { authorization: `Bearer ${ENV_KEY}` } })
  // From four addresses, one key: its budget is the key's, not each address's.
  const running = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'].map(keyed)
  await holding(4)
  const refused = await keyed('192.0.2.5')
  assert.equal(refused.statusCode, 429)
  assert.match(refused.json().detail, /At most 4 .* per API key/)
  // Without the key, an address has its own budget of 1.
  const anonymous = app.inject({ method: 'GET', url: '/v3/plant', remoteAddress: '192.0.2.1' })
  await holding(5)
  release()
  for (const res of await Promise.all([...running, anonymous])) assert.equal(res.statusCode, 200)
})

test('/metrics counts the read-budget refusals by client: an address over its budget, a key over its', async (t) => {
  const { app, holding, release } = await heldApp(t, { readBudget: 1, apiKeys: [ENV_KEY] })
  const key = { authorization: `Bearer ${ENV_KEY}` }
  const running = [app.inject({ method: 'GET', url: '/v3/plant', remoteAddress: '192.0.2.1' }), ...[1, 2, 3, 4].map(() => app.inject({ method: 'GET', url: '/v3/plant', headers: key }))]
  await holding(5)
  assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/count', remoteAddress: '192.0.2.1' })).statusCode, 429)
  assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/changes?after=0', remoteAddress: '192.0.2.1' })).statusCode, 429)
  assert.equal((await app.inject({ method: 'GET', url: '/v3/plant', headers: key })).statusCode, 429)
  release()
  for (const res of await Promise.all(running)) assert.equal(res.statusCode, 200)
  const text = (await app.inject({ method: 'GET', url: '/metrics', headers: key })).body
  assert.match(text, /^read_budget_refusals_total\{client="address"\} 2$/m)
  assert.match(text, /^read_budget_refusals_total\{client="key"\} 1$/m)
})
