import assert from 'node:assert/strict'
import { test } from 'node:test'
import { restoreChanges } from '../../src/catalogue/restore-changes.js'
import { parseMarks } from '../../src/store/restore-marks.js'

// What a restore sends webhook receivers, from what they were told and the restored plants' versions.

test('a plant at the version receivers hold is not sent; one at another is updated, one they lack created, one restored away deleted', () => {
  const told = { plants: [[1, 3], [2, 5], [4, 1]] as Array<[number, number]>, unsure: [] }
  const restored: Array<[number, number]> = [[1, 3], [2, 4], [3, 2]]
  assert.deepEqual(restoreChanges(told, restored), { deleted: [4], sent: [{ id: 2, kind: 'updated' }, { id: 3, kind: 'created' }] })
})

test('a plant changed after the slowest webhook\'s place is sent whatever its version; one gone from both is deleted', () => {
  const told = { plants: [[1, 3], [2, 5]] as Array<[number, number]>, unsure: [1, 6] }
  assert.deepEqual(restoreChanges(told, [[1, 3], [2, 5]]), { deleted: [6], sent: [{ id: 1, kind: 'updated' }] })
})

test('the same catalogue restored over itself sends nothing', () => {
  const plants: Array<[number, number]> = [[1, 1], [2, 7]]
  assert.deepEqual(restoreChanges({ plants, unsure: [] }, plants), { deleted: [], sent: [] })
})

test('a marks file is read with or without told; a told that is not [id, version] pairs and ids is refused', () => {
  const marks = { lastId: 5, feedHead: 9, versionHigh: 9, keys: [] }
  assert.deepEqual(parseMarks(marks), marks)
  const told = { plants: [[1, 2]], unsure: [1] }
  assert.deepEqual(parseMarks({ ...marks, told }).told, told)
  for (const bad of [null, { plants: [[1]], unsure: [] }, { plants: [], unsure: ['1'] }, { plants: [[1, -2]], unsure: [] }, { plants: [] }]) {
    assert.throws(() => parseMarks({ ...marks, told: bad }), /told needs plants/, JSON.stringify(bad))
  }
})
