import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test, type TestContext } from 'node:test'
import type { DeliveryAttempt } from '../../src/catalogue/webhook.js'
import { DELIVERIES_KEPT } from '../../src/store/webhook-store.js'
import { migrate as migrateSqlite, WEBHOOK_RESPONSES_VERSION } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { tempDir } from '../helpers/process.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { until } from '../helpers/receiver.js'

// A webhook's deliveries log: what each receiver answered (its first 4 KiB), attempts whose answer
// came while the service stopped, pages beyond 100, and test sends apart from deliveries.

const service = (t: TestContext, engine: typeof ENGINES[number]): Promise<TestApp> =>
  build(t, engine, { webhookAllowPrivate: true }, {}, { webhooks: { retryDelayMs: () => 60_000 } })

/** A receiver on loopback answering each request as `answer` says (it may wait first). */
async function answering (t: TestContext, answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string, received: () => number }> {
  let received = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => { received++; answer(req, res) })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { server.closeAllConnections(); server.close() })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received: () => received }
}

async function subscribe (api: TestApp, url: string): Promise<number> {
  const res = await api.request({ method: 'POST', url: '/v3/webhooks', payload: { url } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id
}

const deliveries = async (api: TestApp, id: number, query = ''): Promise<{ items: any[], nextCursor: number | null }> => {
  const res = await api.request({ method: 'GET', url: `/v3/webhooks/${id}/deliveries${query}` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

const attempt = (seq: number, at: number): DeliveryAttempt => ({ seq, attempt: 1, at, statusCode: 204, error: null, durationMs: 1, response: '' })

test('SQLite: a catalogue whose log was written before answers were kept lists those attempts with response null, and keeps new answers', async (t) => {
  const dir = tempDir('plants-webhook-responses')
  t.after(dir.remove)
  const db = connect(`${dir.path}/catalogue.db`)
  migrateSqlite(db, () => {}, WEBHOOK_RESPONSES_VERSION)
  db.prepare("INSERT INTO webhooks (url, events, status, secret, cursor, created_at) VALUES ('https://shop.example/h', '[\"created\"]', 'paused', 'whsec_x', 0, 0)").run()
  db.prepare('INSERT INTO webhook_deliveries (webhook_id, seq, attempt, at, status_code, error, duration_ms) VALUES (1, 4, 1, 1000, 500, \'answered 500\', 3)').run()
  db.close()
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  t.after(() => store.close())
  await store.webhooks.recordAttempts(1, [{ ...attempt(5, 2000), response: 'thanks' }])
  assert.deepEqual((await store.webhooks.deliveries(1, { limit: 10 })).map((a) => [a.seq, a.statusCode, a.response]), [[5, 204, 'thanks'], [4, 500, null]])
})

for (const engine of ENGINES) {
  describe(`webhook deliveries log (${engine.name})`, { skip: engine.skip }, () => {
    test('each attempt shows what the receiver answered: its first 4 KiB, as text, NUL and broken UTF-8 as U+FFFD', async (t) => {
      const api = await service(t, engine)
      const bodies = ['no stock system here', `${'é'.repeat(2047)}\u0000${'x'.repeat(5000)}`, Buffer.from([0x61, 0xff, 0x62])]
      let n = 0
      const r = await answering(t, (_req, res) => { res.writeHead(500).end(bodies[n++] ?? '') })
      const id = await subscribe(api, r.url)
      for (let i = 0; i < 3; i++) {
        assert.equal((await api.request({ method: 'POST', url: `/v3/webhooks/${id}/test` })).statusCode, 200)
      }
      const items = (await deliveries(api, id)).items.reverse()
      assert.deepEqual(items.map((a) => [a.statusCode, a.error]), [[500, 'answered 500'], [500, 'answered 500'], [500, 'answered 500']])
      assert.equal(items[0].response, 'no stock system here')
      // 2047 two-byte characters, then NUL: 4095 bytes; one more byte of x makes 4096.
      assert.equal(items[1].response, `${'é'.repeat(2047)}\uFFFDx`)
      assert.equal(Buffer.byteLength(items[1].response), 4096 + 2, 'the NUL is shown as a 3-byte U+FFFD')
      assert.equal(items[2].response, 'a\uFFFDb')
      // A delivery of a change keeps its answer too; an answer that never came is null.
      const plant = await api.add()
      await until('the change attempted', async () => (await deliveries(api, id, '?kind=changes')).items.length > 0)
      const change = (await deliveries(api, id, '?kind=changes')).items[0]
      assert.deepEqual([change.seq, change.statusCode, change.response], [1, 500, ''])
      assert.equal(plant.id > 0, true)
    })

    test('deliveries page beyond 100 with a cursor, newest first, nothing repeated or skipped; 1000 are kept', async (t) => {
      const api = await service(t, engine)
      const id = await subscribe(api, 'https://shop.example/hooks')
      await api.request({ method: 'PATCH', url: `/v3/webhooks/${id}`, payload: { status: 'paused' } })
      const count = DELIVERIES_KEPT + 30
      const store = api.app.store.webhooks
      for (let start = 1; start <= count; start += 200) {
        await store.recordAttempts(id, Array.from({ length: Math.min(200, count - start + 1) }, (_, i) => attempt(start + i, 1_000 + start + i)))
      }
      const seen: number[] = []
      let query = '?limit=100'
      let pages = 0
      for (;;) {
        const page = await deliveries(api, id, query)
        pages++
        assert.ok(page.items.length <= 100)
        seen.push(...page.items.map((a) => a.seq))
        if (page.nextCursor === null) break
        query = `?limit=100&cursor=${page.nextCursor}`
      }
      assert.equal(pages, 10)
      assert.deepEqual(seen, Array.from({ length: DELIVERIES_KEPT }, (_, i) => count - i), 'the newest 1000, newest first')
      const small = await deliveries(api, id, '?limit=7')
      assert.deepEqual(small.items.map((a) => a.seq), [count, count - 1, count - 2, count - 3, count - 4, count - 5, count - 6])
      assert.deepEqual((await deliveries(api, id, `?limit=2&cursor=${small.nextCursor}`)).items.map((a) => a.seq), [count - 7, count - 8])
      for (const bad of ['?limit=101', '?limit=0', '?cursor=x', '?kind=retries']) {
        const res = await api.request({ method: 'GET', url: `/v3/webhooks/${id}/deliveries${bad}` })
        assert.equal(res.statusCode, 400, bad)
        assert.match(res.json().type, /invalid-input$/, bad)
      }
    })

    test('test sends are listed apart (kind=tests, kind=changes) and kept apart: a run of tests pushes no delivery out', async (t) => {
      const api = await service(t, engine)
      const r = await answering(t, (_req, res) => { res.writeHead(204).end() })
      const id = await subscribe(api, r.url)
      await api.add()
      await until('the change delivered', async () => (await deliveries(api, id, '?kind=changes')).items.length === 1)
      assert.equal((await api.request({ method: 'POST', url: `/v3/webhooks/${id}/test` })).statusCode, 200)
      assert.deepEqual((await deliveries(api, id)).items.map((a) => a.seq), [0, 1], 'all, by default')
      assert.deepEqual((await deliveries(api, id, '?kind=tests')).items.map((a) => a.seq), [0])
      assert.deepEqual((await deliveries(api, id, '?kind=changes')).items.map((a) => a.seq), [1])
      await api.app.store.webhooks.recordAttempts(id, Array.from({ length: DELIVERIES_KEPT + 5 }, (_, i) => attempt(0, 5_000 + i)))
      assert.deepEqual((await deliveries(api, id, '?kind=changes')).items.map((a) => a.seq), [1], 'the delivery stays')
      let tests = 0
      for (let page = await deliveries(api, id, '?kind=tests'); ; page = await deliveries(api, id, `?kind=tests&cursor=${page.nextCursor}`)) {
        tests += page.items.length
        if (page.nextCursor === null) break
      }
      assert.equal(tests, DELIVERIES_KEPT)
    })

    test('an attempt whose answer comes while the service stops is recorded: delivered, its place moves on; failed, it says so and is not counted', async (t) => {
      for (const [status, delivered] of [[204, true], [503, false]] as const) {
        const api = await service(t, engine)
        let answer: (() => void) | undefined
        const r = await answering(t, (_req, res) => { answer = () => res.writeHead(status).end(status === 204 ? '' : 'busy') })
        const id = await subscribe(api, r.url)
        await api.add()
        await until('the change sent', async () => r.received() === 1)
        const stopping = api.app.webhookDeliverer.close()
        await new Promise((resolve) => setTimeout(resolve, 50))
        answer!()
        await stopping
        const [logged] = (await deliveries(api, id)).items
        const webhook = (await api.request({ method: 'GET', url: `/v3/webhooks/${id}` })).json()
        if (delivered) {
          assert.deepEqual([logged.seq, logged.statusCode, logged.error], [1, 204, null])
          assert.equal(webhook.deliveredUpTo, 1)
        } else {
          assert.deepEqual([logged.seq, logged.statusCode, logged.response], [1, 503, 'busy'])
          assert.equal(logged.error, 'answered 503; delivery was stopping (the service shutting down, or the webhook paused or removed): not counted as a failure, and tried again when delivery resumes')
          assert.deepEqual([webhook.deliveredUpTo, webhook.attempts, webhook.status], [0, 0, 'active'])
        }
      }
    })
  })
}
