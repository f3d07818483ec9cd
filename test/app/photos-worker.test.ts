import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { HttpProblem } from '../../src/http/problems/problem.js'
import { ImageWorker, PICTURE_DEADLINE_MS } from '../../src/photos/image-worker.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES, type Engine } from '../helpers/engines.js'
import { picture } from '../helpers/pictures.js'
import { tempDir } from '../helpers/process.js'

// The image work runs in a child process of lower priority (src/photos/image-worker.ts).

// Each plant's upload from a client of its own (one address holds at most 3 upload places at once).
const upload = (app: TestApp, id: number, body: Buffer) =>
  app.request({ method: 'POST', url: `/v3/plant/${id}/photos`, payload: body, headers: { 'content-type': 'image/png' }, remoteAddress: `10.0.0.${id % 250 + 1}` })

/** This process's image workers: children running image-process. */
function imageWorkers (): number[] {
  const children = readdirSync('/proc/self/task').flatMap((tid) => {
    try { return readFileSync(`/proc/self/task/${tid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number) } catch { return [] }
  })
  return children.filter((pid) => {
    try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('image-process') } catch { return false }
  })
}

/** A field of every thread's /proc/<pid>/task/<tid>/stat (numbered as in proc(5), from 3 after the name). */
const ofThreads = (pid: number, field: number): number[] => readdirSync(`/proc/${pid}/task`).map((tid) =>
  Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[field - 3]))
const NICE = 19
const POLICY = 41
const SCHED_IDLE = 5

const linux = process.platform === 'linux' ? false : 'reads /proc'

for (const engine of ENGINES) {
  describe(`the image worker on ${engine.name}`, { skip: engine.skip || linux }, () => {
    test('pictures are processed in one child process whose every thread is in the idle scheduling class at nice 19; closing the app stops it', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera' })
      assert.deepEqual(imageWorkers(), [], 'no worker before the first upload')
      for (let i = 0; i < 2; i++) assert.equal((await upload(app, plant.id, await picture('png', i, 300))).statusCode, 201)
      const workers = imageWorkers()
      assert.equal(workers.length, 1, 'one worker, kept between uploads')
      const nices = ofThreads(workers[0], NICE)
      assert.ok(nices.length > 1)
      assert.deepEqual(new Set(nices), new Set([19]), `thread nice values ${nices.join(', ')}`)
      const policies = ofThreads(workers[0], POLICY)
      assert.deepEqual(new Set(policies), new Set([SCHED_IDLE]), `thread scheduling policies ${policies.join(', ')}`)
      await app.app.close()
      assert.deepEqual(imageWorkers(), [])
    })

    test('a worker that dies during a picture: that upload is 503 images-busy with Retry-After, the next one starts a new worker', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera' })
      const pending = upload(app, plant.id, await picture('png', 3, 2000))
      let workers: number[] = []
      while (workers.length === 0) {
        await new Promise((resolve) => setImmediate(resolve))
        workers = imageWorkers()
      }
      process.kill(workers[0], 'SIGKILL')
      const res = await pending
      assert.equal(res.statusCode, 503, res.body)
      assert.equal(res.json().type, '/v3/problems/images-busy')
      assert.equal(res.headers['retry-after'], '2')
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().photos.length, 0)

      assert.equal((await upload(app, plant.id, await picture('png', 4, 300))).statusCode, 201)
      const next = imageWorkers()
      assert.equal(next.length, 1)
      assert.notEqual(next[0], workers[0])
    })
  })
}

test('a picture past its deadline is given up with 503 images-busy naming it, its worker killed; the next picture gets a new worker', { skip: linux }, async (t) => {
  // 1 ms: no answer crosses two processes that fast, so the first picture always overruns.
  const worker = new ImageWorker(1)
  t.after(() => worker.close())
  const first = worker.process(await picture('png', 5, 300), 'image/png')
  const [killed] = imageWorkers()
  await assert.rejects(first, (err: unknown) => {
    assert.ok(err instanceof HttpProblem)
    assert.deepEqual([err.status, err.code, err.headers['retry-after']], [503, 'images-busy', '2'])
    assert.match(err.message, /took longer than 0\.001 s to process and was given up/)
    return true
  })
  worker.deadlineMs = PICTURE_DEADLINE_MS
  const next = await worker.process(await picture('png', 6, 300), 'image/png')
  assert.equal(next.width, 300)
  assert.equal(imageWorkers().includes(killed), false, 'the overrun worker is gone')
  assert.equal(imageWorkers().length, 1)
})

test('pictures and files cross between the service and the worker intact, several at once, and reach a file-backed SQLite store (whose writer thread takes the files\' memory) whole', { skip: linux }, async (t) => {
  const dir = tempDir('plants-photo-pipes')
  t.after(dir.remove)
  // A data folder, not ':memory:': commits then go through the writer thread, which the files are moved to.
  const onDisk: Engine = { name: 'sqlite', skip: false, open: async () => openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 }) }
  const app = await build(t, onDisk)
  const plants = await Promise.all([0, 1, 2, 3, 4].map((i) => app.add({ name: `Plant ${i}` })))
  const answers = await Promise.all(plants.map(async (plant, i) => upload(app, plant.id, await picture('png', 10 + i, 300 + 150 * i))))
  for (const res of answers) assert.equal(res.statusCode, 201, res.body)
  const names = new Set<string>()
  for (const res of answers) {
    for (const url of Object.values(res.json().urls as Record<string, string>)) {
      const file = await app.request({ method: 'GET', url })
      assert.equal(file.statusCode, 200)
      const bytes = file.rawPayload
      assert.ok(bytes.length > 0, `${url} is empty`)
      const name = url.slice('/v3/photos/'.length)
      assert.equal(`${createHash('sha256').update(bytes).digest('base64url')}.${name.split('.')[1]}`, name, `${url} holds other bytes`)
      names.add(name)
    }
  }
  assert.equal(names.size, 15, 'five different pictures, three files each')
})
