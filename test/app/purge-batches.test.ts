import assert from 'node:assert/strict'
import { test } from 'node:test'
import { purgeInBatches } from '../../src/catalogue/purge.js'

// The retention purge's loop, shared by the trash and the history on both engines.

/** A deleter over `rows` rows that records the batch size it was asked for each time. */
function deleter (rows: number): { asked: number[], deleteBatch: (batch: number) => number } {
  let left = rows
  const asked: number[] = []
  return {
    asked,
    deleteBatch: (batch) => {
      asked.push(batch)
      const n = Math.min(batch, left)
      left -= n
      return n
    }
  }
}

test('a synchronous purge deletes batch after batch while they come back full, and returns the total at once', () => {
  const { asked, deleteBatch } = deleter(405)
  assert.equal(purgeInBatches(deleteBatch, 200), 405)
  assert.deepEqual(asked, [200, 200, 200])
})

test('a purge whose rows fill the last batch exactly asks once more, and stops at the empty batch', () => {
  const { asked, deleteBatch } = deleter(400)
  assert.equal(purgeInBatches(deleteBatch, 200), 400)
  assert.deepEqual(asked, [200, 200, 200])
})

test('a purge with nothing to delete asks once', () => {
  const { asked, deleteBatch } = deleter(0)
  assert.equal(purgeInBatches(deleteBatch, 200), 0)
  assert.deepEqual(asked, [200])
})

test('an asynchronous purge waits for each batch before it asks for the next', async () => {
  const { asked, deleteBatch } = deleter(11)
  let running = 0
  const purged = purgeInBatches(async (batch) => {
    assert.equal(running, 0, 'a batch began before the one before it ended')
    running++
    await new Promise((resolve) => setImmediate(resolve))
    running--
    return deleteBatch(batch)
  }, 5)
  assert.ok(purged instanceof Promise)
  assert.equal(await purged, 11)
  assert.deepEqual(asked, [5, 5, 5])
})
