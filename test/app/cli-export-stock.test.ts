import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { plants } from '../../scripts/lib/cli-harness.js'
import { listenOn } from '../../scripts/lib/listening-service.js'
import { CLI_TARGETS } from '../helpers/cli-targets.js'
import { moveStock } from '../helpers/stock-rows.js'

// plants export writes lowStockAt and a stock.<location> column a location (a tracked plant's
// onHand there, empty for one that does not track stock); plants import reads lowStockAt as a
// field, and leaves the stock columns alone without --stock, saying so.

const HEADER = 'id,name,category,tags,status,description,price,sku,barcode,lowStockAt,stock.main,stock.greenhouse,photos,updatedAt'

for (const [where, target] of Object.entries(CLI_TARGETS)) {
  describe(`plants export and import: lowStockAt and stock.<location> (${where})`, { skip: target.skip }, () => {
    test('export writes every location\'s onHand for a tracked plant and empty cells for another; the file loads back unchanged, its counts left alone without --stock', async (t) => {
      const { env, args, open } = await target.make(t)
      const dir = await mkdtemp(join(tmpdir(), 'plants-export-stock-'))
      t.after(() => rm(dir, { recursive: true, force: true }))
      const store = await open()
      await store.create({ name: 'Fern', category: null, tags: [], status: 'available', lowStockAt: 3 })
      await store.create({ name: 'Palm', category: null, tags: [], status: 'available' })
      await store.create({ name: 'Untracked', category: null, tags: [], status: 'available', lowStockAt: 0 })
      await moveStock(store, [
        { plant: 1, location: 'main', delta: 10, reason: 'received', reference: null },
        { plant: 1, location: 'greenhouse', delta: 5, reason: 'received', reference: null },
        { plant: 1, location: 'main', delta: -1, reason: 'sale', reference: null },
        { plant: 2, location: 'main', delta: 2, reason: 'received', reference: null }
      ])
      await store.close()

      const exported = await plants(['export', ...args], env)
      assert.equal(exported.code, 0, exported.stderr)
      const lines = exported.stdout.trimEnd().split('\n')
      assert.equal(lines[0], HEADER)
      assert.match(lines[1], /^1,Fern,,,available,,,,,3,9,5,,\d{4}-/)
      assert.match(lines[2], /^2,Palm,,,available,,,,,,2,0,,\d{4}-/, 'a location the plant holds no level at holds 0')
      assert.match(lines[3], /^3,Untracked,,,available,,,,,0,,,,\d{4}-/, 'a plant that does not track stock: empty cells')

      if (target.skip === false && args[0] === '--data-dir') {
        // Through a running service: the locations, then each tracked plant's levels (GET /v3/plant/{id}/stock).
        const service = await listenOn(args[1])
        try {
          for (const format of ['csv', 'jsonl']) {
            const viaApi = await plants(['export', '--url', service.url, '--format', format])
            assert.equal(viaApi.code, 0, viaApi.stderr)
            assert.equal(viaApi.stdout, (await plants(['export', '--format', format, ...args], env)).stdout, format)
          }
        } finally {
          await service.close()
        }
      }

      const jsonl = await plants(['export', '--format', 'jsonl', ...args], env)
      const records = jsonl.stdout.trimEnd().split('\n').map((l) => JSON.parse(l))
      assert.deepEqual(records.map((r) => [r.stock, r.lowStockAt, r['stock.main'], r['stock.greenhouse']]), [
        [{ onHand: 14, reserved: 0, available: 14 }, 3, 9, 5],
        [{ onHand: 2, reserved: 0, available: 2 }, null, 2, 0],
        [null, 0, undefined, undefined]
      ])

      for (const [name, text] of [['export.csv', exported.stdout], ['export.jsonl', jsonl.stdout]]) {
        const file = join(dir, name)
        await writeFile(file, text)
        const again = await plants(['import', file, ...args], env)
        assert.equal(again.code, 0, again.stderr)
        assert.match(again.stdout, /unchanged +3\n/, name)
        assert.match(again.stderr, new RegExp(`note: the stock.main, stock.greenhouse ${name.endsWith('.csv') ? 'columns' : 'members'} of ${file.replace(/[.]/g, '\\.')} \\(2 rows with a count\\) were not counted: run the import with --stock`), name)
      }

      // lowStockAt is a field like the others: a cell edited is written, an empty one clears it.
      const edited = join(dir, 'edited.csv')
      await writeFile(edited, exported.stdout.replace(/^(2,Palm,,,available,,,,,)/m, '$17').replace(/^(1,Fern,,,available,,,,,)3/m, '$1'))
      const dry = await plants(['import', edited, '--dry-run', ...args], env)
      assert.match(dry.stdout, /edited\.csv:2: would update plant 1: lowStockAt 3 → null\n/)
      assert.match(dry.stdout, /edited\.csv:3: would update plant 2: lowStockAt null → 7\n/)
      assert.equal((await plants(['import', edited, ...args], env)).code, 0)
      const after = await open()
      t.after(() => after.close())
      assert.deepEqual((await after.list({ afterId: 0, limit: 10 })).map((p) => [p.lowStockAt, p.stock?.onHand ?? null]), [[null, 14], [7, 2], [0, null]])
      const bad = join(dir, 'bad.csv')
      await writeFile(bad, 'id,lowStockAt\n2,many\n')
      const refused = await plants(['import', bad, ...args], env)
      assert.equal(refused.code, 1)
      assert.match(refused.stderr, /bad\.csv:2: .*lowStockAt/)
    })
  })
}
