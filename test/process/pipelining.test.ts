import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import net from 'node:net'
import { test } from 'node:test'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { send, startService, tempDir, type ServiceProcess } from '../helpers/process.js'

// A client that pipelines many requests and never reads must cost the service one response, not
// all of them, and must not hold anything once it leaves. Measured on the real process (and its
// cluster workers), against baselines taken in the same run.

/** The service's process and, under WORKERS>1, its workers. */
function processTree (pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
    } catch { return [] }
  })
  return [pid, ...children.flatMap(processTree)]
}

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0)
const rssMb = (pid: number): number => sum(processTree(pid).map((p) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0) / 1024
  } catch { return 0 }
}))
const openFiles = (pid: number): number => sum(processTree(pid).map((p) => {
  try { return readdirSync(`/proc/${p}/fd`).length } catch { return 0 }
}))
const sleep = async (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Total time of `count` sequential /healthz calls, each on its own connection. */
async function probeHealth (url: string, count: number): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < count; i++) assert.equal((await send(url, { method: 'GET', path: '/healthz' })).status, 200)
  return performance.now() - started
}

/** A connection that writes `requests` in one go and never reads what comes back. */
async function pipelineWithoutReading (service: ServiceProcess, request: string, count: number): Promise<net.Socket> {
  const socket = net.connect(service.port, '127.0.0.1')
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.pause()
  socket.write(request.repeat(count))
  return socket
}

/** A catalogue of plants as large as the contract allows: a page of 500 is about 700 KB of JSON. */
async function largeCatalogue (plants: number): Promise<{ path: string, remove: () => void }> {
  const dir = tempDir('plants-pipelining')
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 7 * 86_400_000 })
  const writes = []
  for (let i = 0; i < plants; i++) {
    writes.push(store.create({
      name: `${'N'.repeat(190)}${i}`,
      category: 'C'.repeat(100),
      tags: Array.from({ length: 20 }, (_, k) => `${'t'.repeat(45)}${k}`),
      status: 'available'
    }))
  }
  await Promise.all(writes)
  await store.close()
  return dir
}

for (const workers of ['1', '2']) {
  test(`WORKERS=${workers}: a client pipelining 1,000 list pages without reading grows memory by about one page and does not hold up other clients`, async (t) => {
    const catalogue = await largeCatalogue(500)
    const service = await startService({ dataDir: catalogue.path, env: { WORKERS: workers } })
    t.after(async () => { await service.stop(); catalogue.remove() })
    // Warm every worker: one page read in full by a well-behaved client, then the baseline.
    for (let i = 0; i < 4; i++) assert.equal((await send(service.url, { method: 'GET', path: '/v3/plant?limit=500' })).status, 200)
    const baselineMs = await probeHealth(service.url, 20)
    const before = rssMb(service.pid)

    const hostile = await pipelineWithoutReading(service, 'GET /v3/plant?limit=500 HTTP/1.1\r\nHost: x\r\n\r\n', 1000)
    t.after(() => hostile.destroy())
    const duringMs = await probeHealth(service.url, 20)
    let peak = rssMb(service.pid)
    for (let i = 0; i < 20; i++) {
      await sleep(100)
      peak = Math.max(peak, rssMb(service.pid))
    }
    t.diagnostic(`RSS ${before.toFixed(0)} MB -> peak ${peak.toFixed(0)} MB; 20 /healthz: ${baselineMs.toFixed(0)} ms before, ${duringMs.toFixed(0)} ms during`)
    // Without turns: +1,600 MB and /healthz stalled for seconds (a ratio in the hundreds).
    assert.ok(peak - before < 150, `RSS grew by ${(peak - before).toFixed(0)} MB`)
    assert.ok(duringMs < baselineMs * 30, `/healthz took ${duringMs.toFixed(0)} ms against ${baselineMs.toFixed(0)} ms before`)
  })

  test(`WORKERS=${workers}: pipelined docs assets closed unread leave no file open`, async (t) => {
    const service = await startService({ env: { WORKERS: workers } })
    t.after(async () => { await service.stop() })
    const asset = '/v3/docs/static/swagger-ui-bundle.js'
    // Every worker has served the asset once (lazy opens and caches settle) before counting.
    for (let i = 0; i < 4; i++) assert.equal((await send(service.url, { method: 'GET', path: asset })).status, 200)
    await sleep(200)
    const start = openFiles(service.pid)

    for (const waitMs of [0, 500]) {
      const socket = await pipelineWithoutReading(service, `GET ${asset} HTTP/1.1\r\nHost: x\r\n\r\n`, 1000)
      await sleep(waitMs)
      socket.destroy()
    }
    let now = openFiles(service.pid)
    for (let i = 0; i < 50 && now > start; i++) {
      await sleep(100)
      now = openFiles(service.pid)
    }
    t.diagnostic(`open descriptors: ${start} at the start, ${now} after the clients left`)
    // The leak was one descriptor per pipelined request (40 -> 2,038); a few may come and go on
    // their own meanwhile (a worker's lazily started thread, a pool connection on a loaded machine).
    assert.ok(now - start < 20, `open descriptors: ${start} at the start, ${now} after the clients left`)
    assert.equal((await send(service.url, { method: 'GET', path: '/healthz' })).status, 200)
  })
}
