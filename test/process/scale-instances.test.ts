import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { adminQuery, freshDatabase, postgresEngine, type Scratch } from '../helpers/postgres-engine.js'
import { json, startInstance, timed, type Instance } from '../helpers/scale.js'
import { seedView } from '../helpers/records.js'

// Several service processes on one PostgreSQL database, as behind a load balancer.

describe('service instances sharing one PostgreSQL database', { skip: postgresEngine.skip, timeout: 300_000 }, () => {
  let db: Scratch
  let instances: Instance[] = []

  before(async () => {
    db = await freshDatabase()
    // Four processes start at once against the empty database: all of them run the migrations.
    const started = await Promise.allSettled(Array.from({ length: 4 }, () => startInstance({ DATABASE_URL: db.url })))
    instances = started.filter((s) => s.status === 'fulfilled').map((s) => s.value)
    const failed = started.find((s) => s.status === 'rejected')
    if (failed) throw failed.reason
  })

  after(async () => {
    await Promise.all(instances.map((i) => i.stop()))
    await db?.drop()
  })

  it('four processes migrating one fresh database at once all start, and each migration is applied once', async () => {
    const rows = await adminQuery<{ version: number, n: number }>(
      'SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version ORDER BY version', [], db.url)
    assert.ok(rows.length >= 1)
    for (const r of rows) assert.equal(r.n, 1, `migration ${r.version} recorded ${r.n} times`)
    for (const i of instances) assert.equal((await timed(`${i.url}/readyz`)).res.status, 200)
    // Two instances are enough for what follows; fewer processes keep the machine responsive.
    await Promise.all(instances.slice(2).map((i) => i.stop()))
    instances = instances.slice(0, 2)
  })

  it('50 concurrent PUTs with the same If-Match spread over two instances: exactly one 200 and 49 × 412', async () => {
    const [a, b] = instances
    const created = await timed(`${a.url}/v3/plant`, { method: 'POST', ...json({ name: 'Monstera' }) })
    assert.equal(created.res.status, 200)
    const { id } = created.body
    const etag = created.res.headers.get('etag')!
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      timed(`${(i % 2 === 0 ? a : b).url}/v3/plant`, { method: 'PUT', ...json({ id, name: `Monstera ${i}` }, { 'if-match': etag }) })))
    const statuses = answers.map((x) => x.res.status)
    assert.equal(statuses.filter((s) => s === 200).length, 1, `statuses: ${statuses.join(' ')}`)
    assert.equal(statuses.filter((s) => s === 412).length, 49, `statuses: ${statuses.join(' ')}`)
    const winner = answers.find((x) => x.res.status === 200)!
    for (const instance of instances) {
      const read = await timed(`${instance.url}/v3/plant/${id}`)
      assert.equal(read.body.name, winner.body.name)
      assert.equal(read.res.headers.get('etag'), winner.res.headers.get('etag'))
    }
  })

  it('one Idempotency-Key sent to both instances at once creates one plant, and both answer with it', async () => {
    const [a, b] = instances
    for (let round = 0; round < 5; round++) {
      const key = `scale-${round}-${Date.now()}`
      const body = { name: `Calathea ${key}`, tags: ['race'] }
      const answers = await Promise.all([a, b, a, b].map((i) =>
        timed(`${i.url}/v3/plant`, { method: 'POST', ...json(body, { 'idempotency-key': key }) })))
      assert.deepEqual(answers.map((x) => x.res.status), [200, 200, 200, 200])
      assert.equal(new Set(answers.map((x) => x.body.id)).size, 1, JSON.stringify(answers.map((x) => x.body)))
      const listed = await timed(`${b.url}/v3/plant?tag=race&limit=500`)
      assert.equal(listed.body.items.filter((p: { name: string }) => p.name === body.name).length, 1)
    }
  })

  it('PATCHes of different fields of one plant sent at once through two instances all keep their change; the inventory follows', async () => {
    const [a, b] = instances
    for (let round = 0; round < 5; round++) {
      const created = await timed(`${a.url}/v3/plant`, { method: 'POST', ...json({ name: `Ficus ${round}`, tags: ['old'] }) })
      const { id } = created.body
      const patches = [{ status: 'sold' }, { category: 'indoor' }, { tags: ['new', 'patched'] }, { name: `Ficus lyrata ${round}` }]
      // Each patch goes to both instances (twice the same field: the same value, so the outcome is known).
      const answers = await Promise.all([...patches, ...patches].map((patch, i) =>
        timed(`${(i % 2 === 0 ? a : b).url}/v3/plant/${id}`, { method: 'PATCH', ...json(patch, { 'content-type': 'application/merge-patch+json' }) })))
      assert.deepEqual(answers.map((x) => x.res.status), answers.map(() => 200), JSON.stringify(answers.map((x) => x.body)))
      const expected = { id, name: `Ficus lyrata ${round}`, category: 'indoor', tags: ['new', 'patched'], status: 'sold', photos: [] }
      for (const instance of instances) assert.deepEqual(seedView((await timed(`${instance.url}/v3/plant/${id}`)).body), expected)
      // Eight patches, eight versions: none was lost or merged into another's write.
      const changes = await timed(`${a.url}/v3/plant/changes?after=0&limit=500`)
      assert.equal(changes.body.items.filter((c: { id: number, kind: string }) => c.id === id && c.kind === 'updated').length, 8)
    }
    // No plant here tracks stock: the units are all 0.
    const counted = { available: 0, pending: 0, sold: 0 }
    let cursor = ''
    for (;;) {
      const page = (await timed(`${b.url}/v3/plant?limit=500${cursor}`)).body
      for (const p of page.items as Array<{ status: keyof typeof counted }>) counted[p.status]++
      if (page.nextCursor === null) break
      cursor = `&cursor=${page.nextCursor}`
    }
    for (const instance of instances) assert.deepEqual((await timed(`${instance.url}/v3/store/inventory`)).body, { ...counted, units: { onHand: 0, reserved: 0, available: 0 } })
  })

  it('creates on both instances get distinct ids, each readable from either', async () => {
    const [a, b] = instances
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      timed(`${(i % 2 === 0 ? a : b).url}/v3/plant`, { method: 'POST', ...json({ name: `Pilea ${i}` }) })))
    assert.ok(answers.every((x) => x.res.status === 200))
    const ids = answers.map((x) => x.body.id as number)
    assert.equal(new Set(ids).size, ids.length)
    for (const id of ids) {
      for (const instance of instances) assert.equal((await timed(`${instance.url}/v3/plant/${id}`)).res.status, 200)
    }
  })

  // How soon is the PostgreSQL store's business (its notification, tested without a clock in
  // test/process/postgres-store.test.ts); here, that it arrives at all, through two real processes. The
  // delay is reported, not judged: a loaded machine would make any bound a coin toss.
  it('a change written through one instance reaches an event-stream subscriber of the other', async (t) => {
    const [a, b] = instances
    const head = (await timed(`${b.url}/v3/plant/changes?after=0&limit=500`)).body
    let after = head.next
    for (;;) { // catch up to the end of the feed first
      const page = (await timed(`${b.url}/v3/plant/changes?after=${after}&limit=500`)).body
      if (page.items.length === 0) break
      after = page.next
    }
    const controller = new AbortController()
    const stream = await fetch(`${b.url}/v3/plant/events?after=${after}`, { signal: controller.signal })
    assert.equal(stream.status, 200)
    const reader = stream.body!.getReader()
    const decoder = new TextDecoder()
    await new Promise((resolve) => setTimeout(resolve, 300)) // subscribed
    const created = await timed(`${a.url}/v3/plant`, { method: 'POST', ...json({ name: 'Streamed' }) })
    const committed = Date.now()
    let text = ''
    try {
      while (!text.includes('"Streamed"')) {
        const { value, done } = await reader.read()
        if (done) break
        text += decoder.decode(value)
      }
    } finally {
      controller.abort()
    }
    assert.match(text, new RegExp(`"id":${created.body.id}`))
    t.diagnostic(`reached the other instance ${Date.now() - committed} ms after the commit`)
  })
})
