import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { buildApp } from '../../src/app.js'
import type { BatchResult } from '../../src/catalogue/batch.js'
import { testConfig } from '../../src/config.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { GroupCommit } from '../../src/store/sqlite/group-commit.js'
import type { GroupResult, WriteOp } from '../../src/store/sqlite/writes.js'
import { ENGINES } from '../helpers/engines.js'
import { overriding } from '../helpers/overriding.js'

// A batch's plants are not kept on the event loop's heap while they are being written.
// Kept, 500 plants were copied by every scavenge that fell in their write and then promoted: the
// collections that held the loop longest beside single writes (bench/results/issue-27-import-batches.md).
// A WeakRef to a plant of the request, read after a full collection while the write is still awaited.

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** A write of 500 plants handed to `commits`, made in a frame of its own so that nothing here keeps it. */
function aBatchWrite (commits: GroupCommit): { written: Promise<string>, first: WeakRef<object> } {
  const ops = Array.from({ length: 500 }, (_, i) => ({ kind: 'create', fields: { name: `plant ${i}`, tags: ['green'] }, now: 1, actor: 'test' }))
  return { written: commits.run<string>({ kind: 'batch', ops, now: 1, actor: 'test' } as unknown as WriteOp), first: new WeakRef(ops[0].fields) }
}

describe('a batch in flight', () => {
  test('the group commit lets go of a write once the committer has it, and still settles it and tells the feed', async () => {
    let release!: (result: GroupResult) => void
    let handed = 0
    const committer = {
      // As the writer thread's: the writes are copied on the call, and nothing keeps them after it.
      commit: async (batch: WriteOp[]) => {
        handed += batch.length
        return new Promise<GroupResult>((resolve) => { release = resolve })
      },
      close: async () => {}
    }
    const feed: boolean[] = []
    const commits = new GroupCommit(committer, () => new Error('failed'), (changed) => feed.push(changed))
    const { written, first } = aBatchWrite(commits)
    await new Promise((resolve) => setImmediate(resolve)) // the flush
    assert.equal(handed, 1)
    await new Promise((resolve) => setImmediate(resolve)) // out of the turn that made the WeakRef
    gc()
    assert.equal(first.deref(), undefined, 'the write is still held while its commit is in flight')
    release({ outcomes: [{ ok: true, value: 'done' }] } as unknown as GroupResult)
    assert.equal(await written, 'done')
    assert.deepEqual(feed, [true])
  })

  for (const engine of ENGINES) {
    test(`POST /v3/plant/batch keeps none of its parsed body while the store writes (${engine.name})`, { skip: engine.skip }, async (t) => {
      const inner = await engine.open()
      let first: WeakRef<object> | undefined
      let heldDuringWrite: boolean | undefined
      // The store's batch, watched: a WeakRef to the first operation's plant (the request's own parsed
      // object: toOperation passes it on), read after a full collection once the write is done and
      // before the route has its answer.
      const store = overriding(inner, {
        batch: (...args: Parameters<PlantStore['batch']>): Promise<BatchResult> => {
          const written = inner.batch(...args)
          const operation = args[0][0]
          first = new WeakRef(operation.op === 'create' || operation.op === 'update' ? operation.fields : operation)
          return written.then(async (result) => {
            await new Promise((resolve) => setImmediate(resolve))
            gc()
            heldDuringWrite = first!.deref() !== undefined
            return result
          })
        }
      })
      const app = await buildApp(testConfig(), { store })
      t.after(async () => { await app.close(); await inner.close() })
      const operations = Array.from({ length: 50 }, (_, i) => ({ op: 'create', plant: { name: `Fern ${i}`, tags: ['green'], sku: `FERN-${i}` } }))
      const res = await app.inject({ method: 'POST', url: '/v3/plant/batch', payload: { operations } })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().results.length, 50)
      assert.equal(heldDuringWrite, false, 'the route kept the parsed body through the write')
    })
  }
})
