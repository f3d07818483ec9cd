import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { inspectDatabase, startService, tempDir } from '../helpers/process.js'
import { AuditedCatalogue } from '../helpers/audited-catalogue.js'
import { readLoad } from '../helpers/read-load.js'
import { searchBacklog } from '../../src/store/sqlite/search-backlog.js'

// kill -9 at random moments under concurrent writes and reads (in SQLite's reader threads), on the same data folder round after round:
// every acknowledged write must be on disk and the file must pass SQLite's integrity check.

const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 20)
const WRITERS = 12

test(`SIGKILL under concurrent write load, ${ROUNDS} times: every acknowledged write survives and the database is intact`, async (t) => {
  const dir = tempDir('plants-sigkill')
  t.after(dir.remove)
  const catalogue = new AuditedCatalogue()
  let acknowledged = 0
  let unanswered = 0
  let checked = 0
  for (let round = 0; round < ROUNDS; round++) {
    const service = await startService({ dataDir: dir.path })
    let killed = false
    // A random moment: sometimes before the first commit, sometimes deep into the load.
    const delay = Math.floor(Math.random() * 1200)
    const killer = new Promise<void>((resolve) => setTimeout(() => {
      killed = true
      service.child.kill('SIGKILL')
      resolve()
    }, delay))
    catalogue.resetStats()
    const [, read] = await Promise.all([catalogue.load(service.url, `r${round}`, WRITERS, () => killed), readLoad(service.url, 3, () => killed), killer])
    assert.deepEqual(read.other, [], `round ${round}: reads answered other than 200`)
    const exit = await service.exited
    assert.equal(exit.signal, 'SIGKILL', `round ${round}: the process ended by itself: ${service.output()}`)
    assert.deepEqual(catalogue.stats.otherErrors, [], `round ${round}: unexpected answers`)
    const { integrity, plants } = inspectDatabase(dir.path)
    assert.equal(integrity, 'ok', `round ${round}: integrity_check`)
    const derived = inspectDerived(dir.path)
    assert.deepEqual(derived.inventory, derived.counted, `round ${round}: the kept status counts differ from the plants counted`)
    assert.equal(derived.searchIndex, 'ok', `round ${round}: the name search index`)
    const audit = catalogue.audit(plants)
    assert.deepEqual(audit.lost, [], `round ${round}: acknowledged writes missing after kill -9 at ${delay} ms`)
    acknowledged += catalogue.stats.acknowledged
    unanswered += catalogue.stats.unanswered
    checked = audit.checked
  }
  const summary = `${ROUNDS} kills; ${acknowledged} writes acknowledged, ${unanswered} cut off by the kill; ` +
    `${checked} plants audited against their last acknowledged state, 0 lost; integrity_check ok every round`
  t.diagnostic(summary)
})

/** What the writes keep beside the plants: the status counts (the inventory) and the name search index. */
function inspectDerived (dataDir: string): { inventory: Record<string, number>, counted: Record<string, number>, searchIndex: string } {
  const db = new Database(join(dataDir, 'catalogue.db'))
  try {
    const inventory = Object.fromEntries((db.prepare("SELECT substr(name, 8) AS status, seq AS n FROM sqlite_sequence WHERE name LIKE 'status:%' ORDER BY name").all() as Array<{ status: string, n: number }>).map((r) => [r.status, r.n]))
    const counted = { available: 0, pending: 0, sold: 0, ...Object.fromEntries((db.prepare('SELECT status, count(*) AS n FROM plants GROUP BY status ORDER BY status').all() as Array<{ status: string, n: number }>).map((r) => [r.status, r.n])) }
    let searchIndex = 'ok'
    try {
      // The index is written behind: with its backlog applied it must hold exactly the names.
      db.transaction(() => searchBacklog(db).settle(0, true))()
      db.exec("INSERT INTO plants_fts (plants_fts, rank) VALUES ('integrity-check', 1)")
    } catch (err) {
      searchIndex = (err as Error).message
    }
    return { inventory, counted, searchIndex }
  } finally {
    db.close()
  }
}
