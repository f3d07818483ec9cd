import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AuditedCatalogue } from '../helpers/audited-catalogue.js'
import { inspectDatabase, startService, tempDir } from '../helpers/process.js'

// The short version of test/faults/sigkill.test.ts (npm run test:faults repeats it at random moments).
test('SIGKILL during concurrent writes loses no acknowledged write', async (t) => {
  const dir = tempDir('plants-durability')
  t.after(dir.remove)
  const service = await startService({ dataDir: dir.path })
  const catalogue = new AuditedCatalogue()
  let killed = false
  let loadEnded = false
  // Kill only once the load is well under way: at least 300 writes acknowledged (or the load has
  // stopped by itself, which the assertions below then report).
  const killer = (async () => {
    while (catalogue.stats.acknowledged < 300 && !loadEnded) await new Promise((resolve) => setTimeout(resolve, 10))
    killed = true
    service.child.kill('SIGKILL')
  })()
  const load = catalogue.load(service.url, 'd', 16, () => killed).finally(() => { loadEnded = true })
  await Promise.all([load, killer])
  assert.equal((await service.exited).signal, 'SIGKILL', service.output())
  assert.deepEqual(catalogue.stats.otherErrors, [])
  const { integrity, plants } = inspectDatabase(dir.path)
  assert.equal(integrity, 'ok')
  const audit = catalogue.audit(plants)
  assert.deepEqual(audit.lost, [], 'acknowledged writes missing after SIGKILL')
  assert.ok(audit.checked > 0)
  // Restarted on the same data, the service serves exactly what the audit found.
  const restarted = await startService({ dataDir: dir.path })
  t.after(() => restarted.stop())
  const served: number[] = []
  for (let cursor: string | null = ''; cursor !== null;) {
    const page = await (await fetch(`${restarted.url}/v3/plant?limit=500${cursor ? `&cursor=${cursor}` : ''}`)).json() as { items: Array<{ id: number }>, nextCursor: string | null }
    served.push(...page.items.map((p) => p.id))
    cursor = page.nextCursor
  }
  assert.deepEqual(served, [...plants.keys()].sort((a, b) => a - b))
  t.diagnostic(`${catalogue.stats.acknowledged} writes acknowledged, ${audit.checked} plants audited, 0 lost`)
})
