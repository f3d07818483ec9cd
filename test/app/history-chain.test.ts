import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { historyForgetter, historyReader, historySince } from '../../src/store/sqlite/history.js'
import { migrate } from '../../src/store/sqlite/migrations.js'
import { connect } from '../../src/store/sqlite/writes.js'

// SQLite keeps a plant's versions as a chain (src/store/sqlite/history.ts): the plant's row names
// its newest entry and each entry the one before. The walk must stop where the chain is cut: at
// an entry the retention purge took, and at a seq SQLite handed out again to another plant's entry
// once the newest rows were deleted (rowids are reused from the highest up).

function catalogue (): { db: ReturnType<typeof connect>, done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'history-chain-'))
  const db = connect(join(dir, 'catalogue.db'))
  migrate(db)
  return { db, done: () => { db.close(); rmSync(dir, { recursive: true, force: true }) } }
}

test('a plant\'s history is its chain from its row, cut where the retention purge cut it, and never another plant\'s entries under a reused seq', () => {
  const { db, done } = catalogue()
  try {
    const plant = db.prepare("INSERT INTO plants (name, name_key, tags, status, version, created_at, updated_at) VALUES (?, ?, '[]', 'available', ?, 0, 0)")
    const entry = db.prepare('INSERT INTO history (plant_id, version, kind, at, actor, changes, prev) VALUES (?, ?, 1, ?, ?, ?, ?)')
    const add = (id: number, version: number, prev: number | null): number =>
      Number(entry.run(id, version, version * 1000, 'till-1', JSON.stringify({ status: [`v${version - 1}`, `v${version}`] }), prev).lastInsertRowid)
    const fern = Number(plant.run('Fern', 'fern', 3).lastInsertRowid)
    const ivy = Number(plant.run('Ivy', 'ivy', 2).lastInsertRowid)
    // Interleaved, as writes to two plants come: fern 1, ivy 1, fern 2, ivy 2, fern 3.
    const f1 = add(fern, 1, null)
    const i1 = add(ivy, 1, null)
    const f2 = add(fern, 2, f1)
    const i2 = add(ivy, 2, i1)
    const f3 = add(fern, 3, f2)
    db.prepare('UPDATE plants SET history_seq = ? WHERE id = ?').run(f3, fern)
    db.prepare('UPDATE plants SET history_seq = ? WHERE id = ?').run(i2, ivy)

    const read = historyReader(db)
    assert.deepEqual(read(fern, undefined, 10)!.map((e) => e.version), [3, 2, 1])
    assert.deepEqual(read(fern, 3, 10)!.map((e) => e.version), [2, 1], 'below version 3')
    assert.deepEqual(read(fern, undefined, 2)!.map((e) => e.version), [3, 2], 'a page of 2')
    assert.deepEqual(read(ivy, undefined, 10)!.map((e) => e.version), [2, 1])
    assert.equal(read(999, undefined, 10), undefined, 'no such plant')
    assert.deepEqual(historySince(db)(fern, f3, 2).map((e) => e.version), [3, 2])

    // The retention purge took the two oldest rows: fern's walk ends at version 2.
    db.prepare('DELETE FROM history WHERE seq <= ?').run(i1)
    assert.deepEqual(read(fern, undefined, 10)!.map((e) => e.version), [3, 2])
    assert.deepEqual(historySince(db)(fern, f3, 1).map((e) => e.version), [3, 2], 'a revert to version 1 sees it is no longer kept')

    // Fern's newest rows go (its purge from the trash, as historyForgetter does), so SQLite hands
    // f3's seq to the next entry written, which is a new plant's: ivy's chain is untouched, and a
    // stale head pointing at the reused seq reads nothing of the other plant.
    historyForgetter(db)(fern, f3)
    assert.equal(db.prepare('SELECT count(*) FROM history WHERE plant_id = ?').pluck().get(fern), 0)
    const moss = Number(plant.run('Moss', 'moss', 1).lastInsertRowid)
    const m1 = add(moss, 1, null)
    assert.ok(m1 <= f3, `the seq was handed out again (${m1} <= ${f3})`)
    db.prepare('UPDATE plants SET history_seq = ? WHERE id = ?').run(f3, fern)
    assert.deepEqual(read(fern, undefined, 10), [], 'fern reads none of moss\'s entries')
    assert.deepEqual(read(ivy, undefined, 10)!.map((e) => e.version), [2])
  } finally {
    done()
  }
})
