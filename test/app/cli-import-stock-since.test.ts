import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import { plants } from '../../scripts/lib/cli-harness.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { CLI_TARGETS, type CliTarget } from '../helpers/cli-targets.js'

// plants import --stock with an export's file: each stock cell is compared with the level at the
// export (the ledger's), so a sale made since stands: a cell as exported counts nothing even where
// the level moved, a cell edited where it also moved is refused, saying what happened, and a cell
// edited where nothing moved is the count. The summary counts every row naming a plant.

const levelsOf = async (store: PlantStore, id: number): Promise<Record<string, number>> =>
  Object.fromEntries((await store.stock.levels(id) ?? []).map((l) => [l.location, l.onHand]))

/** Fern (main 9, greenhouse 5), Ficus (main 4, greenhouse 2) and Palm (main 2), exported; the export's lines and a folder for files. */
async function exported (t: TestContext, target: { make: (t: TestContext) => Promise<CliTarget> }): Promise<CliTarget & { lines: string[], dir: string }> {
  const made = await target.make(t)
  const dir = await mkdtemp(join(tmpdir(), 'plants-import-stock-since-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const store = await made.open()
  try {
    await store.stock.addLocation('greenhouse')
    for (const name of ['Fern', 'Ficus', 'Palm']) await store.create({ name, category: null, tags: [], status: 'available', price: '4.00' })
    for (const [id, location, delta] of [[1, 'main', 9], [1, 'greenhouse', 5], [2, 'main', 4], [2, 'greenhouse', 2], [3, 'main', 2]] as const) {
      await store.stock.move(id, { delta, reason: 'received', location })
    }
  } finally {
    await store.close()
  }
  const result = await plants(['export', ...made.args], made.env)
  assert.equal(result.code, 0, result.stderr)
  const lines = result.stdout.split('\n')
  assert.equal(lines[0], 'id,name,category,tags,status,description,price,sku,barcode,lowStockAt,stock.main,stock.greenhouse,photos,updatedAt')
  assert.deepEqual(lines.slice(1, 4).map((l) => l.split(',').slice(0, 12).join(',')), ['1,Fern,,,available,,4.00,,,,9,5', '2,Ficus,,,available,,4.00,,,,4,2', '3,Palm,,,available,,4.00,,,,2,0'])
  return { ...made, lines, dir }
}

async function sell (open: () => Promise<PlantStore>, sales: Array<[number, string]>): Promise<void> {
  const store = await open()
  try {
    for (const [id, location] of sales) await store.stock.move(id, { delta: -1, reason: 'sale', location })
  } finally {
    await store.close()
  }
}

for (const [where, target] of Object.entries(CLI_TARGETS)) {
  describe(`plants import --stock of an export, against the ledger (${where})`, { skip: target.skip }, () => {
    test('sales made since the export stand where the file kept the exported count; the edited cell is counted; the dry run names every decision, the update first', async (t) => {
      const { env, args, open, lines, dir } = await exported(t, target)
      // At the tills, after the export: one Fern from the greenhouse, one Ficus from the shop.
      await sell(open, [[1, 'greenhouse'], [2, 'main']])
      const file = join(dir, 'counted.csv')
      // Only the Fern's stock.main is edited (12 counted in the shop), and its price.
      await writeFile(file, [lines[0], lines[1].replace(',4.00,,,,9,5,', ',4.50,,,,12,5,'), lines[2], lines[3], ''].join('\n'))

      const dry = await plants(['import', file, '--stock', '--dry-run', ...args], env)
      assert.equal(dry.code, 0, dry.stderr)
      assert.deepEqual(dry.stdout.split('\n').filter((l) => l.startsWith(`${file}:`)), [
        `${file}:2: would update plant 1: price "4.00" → "4.50"`,
        `${file}:2: would count plant 1 "Fern": stock.main 9 → 12`,
        `${file}:2: would leave plant 1 "Fern": stock.greenhouse 5 as exported, 4 now (sold 1 since)`,
        `${file}:3: would leave plant 2 "Ficus": stock.main 4 as exported, 3 now (sold 1 since)`
      ])
      assert.match(dry.stdout, /would be counted 1 location \(the "would count" lines\)/)
      assert.match(dry.stdout, /would be left {4}2 locations as exported, where the stock moved since \(the "would leave" lines\)/)

      const run = await plants(['import', file, '--stock', ...args], env)
      assert.equal(run.code, 0, run.stderr)
      assert.match(run.stdout, /counted +1 location \(movements with reason count\)/)
      assert.match(run.stdout, /left +2 locations as exported, where the stock moved since \(no movement\)/)
      const store = await open()
      t.after(() => store.close())
      assert.deepEqual([await levelsOf(store, 1), await levelsOf(store, 2), await levelsOf(store, 3)], [{ main: 12, greenhouse: 4 }, { main: 3, greenhouse: 2 }, { main: 2 }], 'the two sales stand')
      assert.equal((await store.get(1))?.price, '4.50')
      const fern = await store.stock.movements(1, undefined, 10)
      assert.deepEqual(fern!.slice(0, 2).map((m) => [m.reason, m.location, m.delta, m.onHandAfter]), [['count', 'main', 3, 12], ['sale', 'greenhouse', -1, 4]])
      assert.deepEqual((await store.stock.movements(2, undefined, 10))!.map((m) => m.reason), ['sale', 'received', 'received'], 'no count of the Ficus')
    })

    test('a cell edited where the level also moved since is refused, naming the line, the column and what happened; a cell where nothing moved is counted; a count equal to the level now moves nothing', async (t) => {
      const { env, args, open, lines, dir } = await exported(t, target)
      await sell(open, [[1, 'main'], [1, 'main'], [1, 'greenhouse']])
      const store = await open()
      await store.stock.move(1, { delta: 6, reason: 'received' })
      await store.close()
      const file = join(dir, 'counted.csv')
      // Fern: main 9 → 11 in the file (since: sold 2, received 6: 13 now); greenhouse 5 → 4, which it is now. Ficus: main 4 → 6, nothing moved.
      await writeFile(file, [lines[0], lines[1].replace(',9,5,', ',11,4,'), lines[2].replace(',4,2,', ',6,2,'), lines[3], ''].join('\n'))
      const refusal = `${file}:2: stock.main moved since the export (sold 2, received 6): count it again (9 then, 13 now, 11 in the file; a new export holds the level now); nothing counted there`
      for (const dry of [['--dry-run'], []]) {
        const result = await plants(['import', file, '--stock', ...dry, ...args], env)
        assert.equal(result.code, 1, result.stderr)
        assert.deepEqual(result.stderr.split('\n').filter((l) => l.startsWith(`${file}:`)), [refusal])
        assert.match(result.stdout, /rejected +1 {2}\(1 line listed/)
        if (dry.length > 0) assert.deepEqual(result.stdout.split('\n').filter((l) => l.startsWith(`${file}:`)), [`${file}:3: would count plant 2 "Ficus": stock.main 4 → 6`])
        else assert.match(result.stdout, /counted +1 location/)
      }
      const after = await open()
      t.after(() => after.close())
      assert.deepEqual([await levelsOf(after, 1), await levelsOf(after, 2)], [{ main: 13, greenhouse: 4 }, { main: 6, greenhouse: 2 }])
    })

    test('a stocktake since the export that found the level as it was (delta 0) moved nothing: the edited cell is counted, not refused', async (t) => {
      const { env, args, open, lines, dir } = await exported(t, target)
      const store = await open()
      const same = await store.stock.move(1, { set: 9, expected: 9, reason: 'count' })
      assert.deepEqual([same.movement.delta, same.version], [0, (await store.get(1))!.version])
      await store.close()
      const file = join(dir, 'counted.csv')
      await writeFile(file, [lines[0], lines[1].replace(',9,5,', ',12,5,'), ''].join('\n'))
      const run = await plants(['import', file, '--stock', ...args], env)
      assert.equal(run.code, 0, run.stderr)
      assert.match(run.stdout, /counted +1 location/)
      const after = await open()
      t.after(() => after.close())
      assert.deepEqual(await levelsOf(after, 1), { main: 12, greenhouse: 5 })
    })

    test('a row without updatedAt (a hand-made file) counts against the level now', async (t) => {
      const { env, args, open, dir } = await exported(t, target)
      await sell(open, [[1, 'main']])
      const file = join(dir, 'hand.csv')
      await writeFile(file, 'id,stock.main\n1,12\n')
      const run = await plants(['import', file, '--stock', ...args], env)
      assert.equal(run.code, 0, run.stderr)
      assert.match(run.stdout, /counted +1 location/)
      const store = await open()
      t.after(() => store.close())
      assert.deepEqual(await levelsOf(store, 1), { main: 12, greenhouse: 5 })
    })

    test('rows naming plants whose stock cells are refused still count as matched in the summary', async (t) => {
      const { env, args, dir } = await exported(t, target)
      const file = join(dir, 'bad.csv')
      await writeFile(file, 'id,sku,stock.main\n1,,x\n2,,-1\n3,,1.5\n1,," 3"\n4,,2\n')
      for (const dry of [['--dry-run'], []]) {
        const result = await plants(['import', file, '--stock', ...dry, ...args], env)
        assert.equal(result.code, 1, result.stderr)
        assert.match(result.stdout, /matched by id +4\n/, result.stderr)
        assert.match(result.stdout, /rejected +5 /)
      }
    })
  })
}

test('plants import --help gives the CSV header with its stock.LOCATION columns, and what --stock does with an export\'s cells', async () => {
  const help = (await plants(['import', '--help'])).stdout
  assert.match(help, /header id,name,category,tags,status,description,price,sku,barcode,lowStockAt\nand stock\.LOCATION columns \(stock\.main,stock\.greenhouse,…\)/)
  assert.match(help, /plants export writes a stock\.LOCATION column for each location/)
  assert.match(help, /stock\.main moved since the export \(sold 1\): count it again/)
})
