import assert from 'node:assert/strict'
import { test } from 'node:test'
import { inspectDatabase, send, startService, tempDir } from '../helpers/process.js'
import { AuditedCatalogue } from '../helpers/audited-catalogue.js'
import { readLoad } from '../helpers/read-load.js'

// SIGTERM while writers and readers keep sending (the reads in SQLite's reader threads): readiness fails at once, every request that reached the
// service is answered (a refused connection never reached it), nothing acknowledged is lost,
// and the process exits by itself, cleanly, once the grace period and the requests in flight are over.

const ROUNDS = Math.max(1, Math.ceil(Number(process.env.FAULT_ROUNDS ?? 20) / 5))
const GRACE_MS = 1500
// Generous: the grace, then the requests in flight and closing the store; not a performance bound.
const EXIT_WAIT_MS = GRACE_MS + 10_000

test(`SIGTERM under write and read load, ${ROUNDS} times: every accepted request answered, reads included, nothing acknowledged lost, exit within the grace period`, async (t) => {
  const dir = tempDir('plants-sigterm')
  t.after(dir.remove)
  const catalogue = new AuditedCatalogue()
  let acknowledged = 0
  let refusedAfterClose = 0
  let reset = 0
  let readsAnswered = 0
  for (let round = 0; round < ROUNDS; round++) {
    const service = await startService({ dataDir: dir.path, env: { SHUTDOWN_GRACE_MS: String(GRACE_MS) } })
    catalogue.resetStats()
    let exited = false
    void service.exited.then(() => { exited = true })
    const load = catalogue.load(service.url, `r${round}`, 12, () => exited)
    const reads = readLoad(service.url, 4, () => exited)
    await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 700))
    const signalledAt = Date.now()
    service.child.kill('SIGTERM')
    // Readiness turns 503 as soon as the signal is handled, while the service still answers. The signal
    // is delivered asynchronously, so a probe sent at the same moment may still be answered 200.
    let ready = await send(service.url, { method: 'GET', path: '/readyz' })
    for (let i = 0; i < 20 && ready.status === 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      ready = await send(service.url, { method: 'GET', path: '/readyz' })
    }
    assert.equal(ready.status, 503, `round ${round}: /readyz after SIGTERM, within the grace period`)
    assert.match(ready.json().type, /shutting-down$/)
    const exit = await Promise.race([
      service.exited,
      new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), EXIT_WAIT_MS))
    ])
    if (exit === 'still running') service.child.kill('SIGKILL')
    assert.notEqual(exit, 'still running', `round ${round}: no exit within ${EXIT_WAIT_MS} ms of SIGTERM`)
    assert.deepEqual(exit, { code: 0, signal: null }, `round ${round}: exit status\n${service.output()}`)
    const tookMs = Date.now() - signalledAt
    await load
    const read = await reads
    // A read in flight when the store closes is finished first: never a 503 from a closing store.
    assert.deepEqual(read.other, [], `round ${round}: reads answered other than 200`)
    assert.ok(read.ok > 0, `round ${round}: no read answered`)
    readsAnswered += read.ok
    assert.deepEqual(catalogue.stats.otherErrors, [], `round ${round}: unexpected answers`)
    const { integrity, plants } = inspectDatabase(dir.path)
    assert.deepEqual(catalogue.droppedButApplied(plants), [], `round ${round}: writes applied but never answered`)
    reset += catalogue.stats.dropped.length
    assert.equal(integrity, 'ok')
    assert.deepEqual(catalogue.audit(plants).lost, [], `round ${round}: acknowledged writes missing after SIGTERM`)
    acknowledged += catalogue.stats.acknowledged
    refusedAfterClose += catalogue.stats.unanswered - catalogue.stats.dropped.length
    t.diagnostic(`round ${round}: exited ${tookMs} ms after SIGTERM (grace ${GRACE_MS} ms), ${catalogue.stats.acknowledged} writes acknowledged`)
  }
  t.diagnostic(`${ROUNDS} SIGTERMs; ${readsAnswered} reads answered 200, none otherwise; ${acknowledged} writes acknowledged, all found; ${refusedAfterClose} connections refused after the listener closed, ` +
    `${reset} reset before the service read them (none of those writes took effect)`)
})
