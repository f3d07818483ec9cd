import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ENGINES } from '../helpers/engines.js'
import { OpenApiCheck } from '../helpers/openapi-check.js'
import { freshSchema } from '../helpers/postgres-engine.js'
import { workerPids } from '../helpers/process.js'
import { request, startInstance, type Instance } from '../helpers/scale.js'
import { seedView } from '../helpers/records.js'

// WORKERS=2: the same API, answered by whichever worker the connection lands on.

for (const engine of ENGINES) {
  describe(`a clustered instance (WORKERS=2) on ${engine.name}`, { skip: engine.skip, timeout: 300_000 }, () => {
    let instance: Instance
    let openapi: OpenApiCheck
    let cleanup: () => Promise<void> = async () => {}

    /** A request on its own connection, checked against the served OpenAPI document. */
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await request(instance.url, path, { method, body, headers })
      openapi.check(method, path, res.status, res.headers, res.text)
      return res
    }

    before(async () => {
      let env: Record<string, string>
      if (engine.name === 'postgres') {
        const scratch = await freshSchema()
        env = { DATABASE_URL: scratch.url }
        cleanup = scratch.drop
      } else {
        const dir = mkdtempSync(join(tmpdir(), 'scale-cluster-'))
        env = { DATA_DIR: dir }
        cleanup = async () => rmSync(dir, { recursive: true, force: true })
      }
      instance = await startInstance({ ...env, WORKERS: '2' })
      openapi = new OpenApiCheck((await request(instance.url, '/v3/openapi.json')).body)
    })

    after(async () => {
      await instance?.stop()
      await cleanup()
    })

    it('runs two workers behind one port', () => {
      assert.equal(workerPids(instance.child.pid!).length, 2)
    })

    it('add, read, conditional update and delete behave as on one process, whichever worker answers', async () => {
      const created = await call('POST', '/v3/plant', { name: 'Monstera', category: 'indoor', tags: ['large'] })
      assert.equal(created.status, 200)
      const { id } = created.body
      assert.equal(created.headers.location, `/v3/plant/${id}`)
      const etag = created.headers.etag as string
      for (let i = 0; i < 6; i++) { // several connections: both workers see the write
        const read = await call('GET', `/v3/plant/${id}`)
        assert.equal(read.status, 200)
        assert.deepEqual(seedView(read.body), { id, name: 'Monstera', category: 'indoor', tags: ['large'], status: 'available', photos: [] })
        assert.equal((await call('GET', `/v3/plant/${id}`, undefined, { 'if-none-match': etag })).status, 304)
      }
      const updated = await call('PUT', '/v3/plant', { id, name: 'Monstera deliciosa' }, { 'if-match': etag })
      assert.equal(updated.status, 200)
      assert.deepEqual(seedView(updated.body), { id, name: 'Monstera deliciosa', category: null, tags: [], status: 'available', photos: [] })
      assert.equal((await call('PUT', '/v3/plant', { id, name: 'Stale' }, { 'if-match': etag })).status, 412)
      assert.equal((await call('PUT', '/v3/plant', { id: 987_654_321, name: 'Nobody' })).status, 404)
      assert.equal((await call('PUT', '/v3/plant', { id: 'x', name: 'Bad id' })).body.title, 'Invalid ID supplied')
      assert.equal((await call('DELETE', `/v3/plant/${id}`)).status, 204)
      assert.equal((await call('DELETE', `/v3/plant/${id}`)).status, 404)
      assert.equal((await call('GET', `/v3/plant/${id}`)).status, 404)
    })

    it('refuses invalid input with the contract\'s errors', async () => {
      const bad = await call('POST', '/v3/plant', { name: 'x', staus: 'sold' })
      assert.equal(bad.status, 405)
      assert.ok(bad.headers.allow)
      assert.equal((await call('GET', '/v3/plant?limit=0')).status, 400)
      assert.equal((await call('PATCH', '/v3/plant')).status, 405)
      assert.equal((await call('GET', '/v3/nowhere')).status, 404)
    })

    it('an Idempotency-Key replays across workers and refuses another body', async () => {
      const key = `cluster-${Date.now()}`
      const answers = await Promise.all([1, 2, 3, 4].map(() => call('POST', '/v3/plant', { name: 'Fern' }, { 'idempotency-key': key })))
      assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200])
      assert.equal(new Set(answers.map((a) => a.body.id)).size, 1)
      assert.equal((await call('POST', '/v3/plant', { name: 'Not a fern' }, { 'idempotency-key': key })).status, 422)
    })

    it('pages a tag filter in id order with no plant missed or repeated', async () => {
      const tag = `t${Date.now()}`
      const ids: number[] = []
      for (let i = 0; i < 7; i++) ids.push((await call('POST', '/v3/plant', { name: `Pilea ${i}`, tags: [tag, 'x'] })).body.id)
      const seen: number[] = []
      let cursor: string | null = null
      do {
        const page: { status: number, body: { items: Array<{ id: number }>, nextCursor: string | null } } =
          await call('GET', `/v3/plant?tag=${tag}&tag=x&limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
        assert.equal(page.status, 200)
        seen.push(...page.body.items.map((p) => p.id))
        cursor = page.body.nextCursor
      } while (cursor)
      assert.deepEqual(seen, ids)
    })

    it('the change feed lists every write once, in order', async () => {
      const { body: plant } = await call('POST', '/v3/plant', { name: 'Feed' })
      await call('PUT', '/v3/plant', { id: plant.id, name: 'Feed 2' })
      await call('DELETE', `/v3/plant/${plant.id}`)
      const items: Array<{ seq: number, id: number, kind: string }> = []
      let after = 0
      for (;;) {
        const page = await call('GET', `/v3/plant/changes?after=${after}&limit=50`)
        assert.equal(page.status, 200)
        if (page.body.items.length === 0) break
        items.push(...page.body.items)
        after = page.body.next
      }
      assert.deepEqual(items.map((c) => c.seq), items.map((_, i) => i + 1))
      assert.deepEqual(items.filter((c) => c.id === plant.id).map((c) => c.kind), ['created', 'updated', 'deleted'])
    })

    it('stops on SIGTERM with exit code 0', async () => {
      assert.equal(await instance.stop(), 0, instance.output())
    })
  })
}
