import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { plants } from '../../scripts/lib/cli-harness.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { CLI_TARGETS } from '../helpers/cli-targets.js'

// plants import --stock: each stock.<location> cell of a row naming a plant is a count, through the
// store's movements (reason count, actor cli, in the ledger); --dry-run names every change; a
// location the catalogue lacks is refused, naming the line and the column, and never made.

const levelsOf = async (store: PlantStore, id: number): Promise<Record<string, number>> =>
  Object.fromEntries((await store.stock.levels(id) ?? []).map((l) => [l.location, l.onHand]))

for (const [where, target] of Object.entries(CLI_TARGETS)) {
  describe(`plants import --stock (${where})`, { skip: target.skip }, () => {
    test('an export with edited counts loads back as count movements; the dry run names each change and changes nothing; the next export says the same', async (t) => {
      const { env, args, open } = await target.make(t)
      const dir = await mkdtemp(join(tmpdir(), 'plants-import-stock-'))
      t.after(() => rm(dir, { recursive: true, force: true }))
      let store = await open()
      await store.stock.addLocation('greenhouse')
      for (const name of ['Fern', 'Palm', 'Untracked']) await store.create({ name, category: null, tags: [], status: 'available' })
      await store.stock.move(1, { delta: 10, reason: 'received' })
      await store.stock.move(1, { delta: 5, reason: 'received', location: 'greenhouse' })
      await store.stock.move(1, { delta: -1, reason: 'sale' })
      await store.stock.move(2, { delta: 2, reason: 'received' })
      await store.close()

      const exported = await plants(['export', ...args], env)
      assert.equal(exported.code, 0, exported.stderr)
      const lines = exported.stdout.split('\n')
      assert.match(lines[1], /^1,Fern,,,available,,,,,,9,5,/)
      const file = join(dir, 'counted.csv')
      // Counted: the Fern 12 in the shop and none left in the greenhouse; 4 of the untracked plant in the shop; the Palm as exported.
      await writeFile(file, [lines[0], lines[1].replace(',9,5,', ',12,0,'), lines[2], lines[3].replace(/^(3,Untracked,,,available,,,,,),,/, '$1,4,'), ''].join('\n'))

      const dry = await plants(['import', file, '--stock', '--dry-run', ...args], env)
      assert.equal(dry.code, 0, dry.stderr)
      const said = dry.stdout.split('\n').filter((l) => l.includes(': would count'))
      assert.deepEqual(said, [
        `${file}:2: would count plant 1 "Fern": stock.main 9 → 12, stock.greenhouse 5 → 0`,
        `${file}:4: would count plant 3 "Untracked": stock.main untracked → 4`
      ])
      assert.match(dry.stdout, /would be counted 3 locations/)
      store = await open()
      assert.deepEqual([await levelsOf(store, 1), (await store.get(3))?.stock], [{ main: 9, greenhouse: 5 }, null], 'the dry run changed nothing')
      await store.close()

      const run = await plants(['import', file, '--stock', ...args], env)
      assert.equal(run.code, 0, run.stderr)
      assert.match(run.stdout, /counted +3 locations \(movements with reason count\)/)
      assert.doesNotMatch(run.stderr, /not counted/)
      store = await open()
      try {
        assert.deepEqual(await levelsOf(store, 1), { main: 12, greenhouse: 0 })
        assert.deepEqual(await levelsOf(store, 2), { main: 2 })
        assert.deepEqual((await store.get(3))?.stock, { onHand: 4, reserved: 0, available: 4 }, 'a count starts tracking a plant')
        const ledger = await store.stock.movements(1, undefined, 10)
        assert.deepEqual(ledger!.slice(0, 2).map((m) => [m.reason, m.actor, m.location, m.delta, m.onHandAfter]), [['count', 'cli', 'greenhouse', -5, 0], ['count', 'cli', 'main', 3, 12]])
        assert.equal(ledger!.length, 5, 'the sales and receipts before stay in the ledger')
      } finally {
        await store.close()
      }
      const again = await plants(['export', ...args], env)
      assert.deepEqual(again.stdout.split('\n').map((l) => l.split(',').slice(0, 12).join(',')), [
        lines[0].split(',').slice(0, 12).join(','), '1,Fern,,,available,,,,,,12,0', '2,Palm,,,available,,,,,,2,0', '3,Untracked,,,available,,,,,,4,0', ''
      ], 'exported again, the counts read back as imported')
      const twice = await plants(['import', file, '--stock', ...args], env)
      assert.match(twice.stdout, /counted +0 locations/, 'counts equal to the levels move nothing')
    })

    test('a location the catalogue lacks is refused, naming the line and the column, and never made; so is a count of a row that adds a plant', async (t) => {
      const { env, args, open } = await target.make(t)
      const dir = await mkdtemp(join(tmpdir(), 'plants-import-stock-'))
      t.after(() => rm(dir, { recursive: true, force: true }))
      const store = await open()
      await store.create({ name: 'Fern', category: null, tags: [], status: 'available' })
      await store.close()
      const file = join(dir, 'attic.csv')
      await writeFile(file, 'id,name,stock.main,stock.attic\n1,Fern,3,\n1,Fern Renamed,4,2\n,New plant,5,\n1,Fern,x,\n')
      for (const dry of [['--dry-run'], []]) {
        const result = await plants(['import', file, '--stock', ...dry, ...args], env)
        assert.equal(result.code, 1, result.stderr)
        assert.match(result.stderr, /attic\.csv:3: stock\.attic: no location "attic" in the catalogue: add it first \(POST \/v3\/locations\)/)
        assert.match(result.stderr, /attic\.csv:4: stock\.main: a count goes to a plant of the catalogue, named by its id or sku, and this row adds one/)
        assert.match(result.stderr, /attic\.csv:5: stock\.main must be a whole number, 0 or more \(a count\), not "x"/)
      }
      const url = await plants(['import', file, '--stock', '--url', 'http://127.0.0.1:9'], env)
      assert.equal(url.code, 2)
      assert.match(url.stderr, /--stock goes with a data folder or DATABASE_URL, not --url/)
      const after = await open()
      t.after(() => after.close())
      assert.deepEqual((await after.stock.locations()).map((l) => l.name), ['main'], 'no location made')
      assert.deepEqual([await levelsOf(after, 1), (await after.get(1))?.name], [{ main: 3 }, 'Fern'], 'line 2 counted; line 3 refused whole, its rename too')
      assert.equal((await after.list({ afterId: 0, limit: 10 })).length, 1)
    })
  })
}
