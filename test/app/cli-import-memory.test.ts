import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { test, type TestContext } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { main } from '../../src/cli/main.js'
import { lastImport } from '../../src/cli/import.js'
import { plants } from '../../scripts/lib/cli-harness.js'
import { freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'

// `plants import` holds a bounded number of rows at once, whatever the file's size: a
// dry run of 2,000,000 rows reached 2.8 GB when every row's keys, records and plants were kept in
// memory. What the import must remember of the whole file is kept on disk (import-scratch.ts).

async function tempDir (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plants-import-memory-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  return dir
}

const CARE = 'Bright indirect light; water when the top 3 cm of soil are dry, less in winter. Keep away from draughts and radiators, ' +
  'and mist the leaves in a dry room. Feed monthly from April to September with a balanced feed at half strength. Repot every second ' +
  'spring in a free-draining mix, one size up; it flowers best a little pot-bound.'

/**
 * `n` rows (a multiple of 100) of new plants with SKUs and descriptions, some 480 bytes each; in
 * every hundred, one bad row (its status) and one giving the SKU of the row before (refused by the
 * plan): n / 50 rejected.
 */
async function generated (dir: string, n: number): Promise<string> {
  const file = join(dir, `plants-${n}.csv`)
  const lines = ['name,category,tags,status,description,price,sku']
  for (let i = 0; i < n; i++) {
    const sku = `MEM-${String(i % 100 === 71 ? i - 1 : i).padStart(8, '0')}`
    const description = `Plant ${i}, grown in our own glasshouse. ${CARE}`
    lines.push(`Plant ${i},indoor,green|large,${i % 100 === 37 ? 'gone' : 'available'},"${description}",${(i % 900) + 1}.50,${sku}`)
  }
  await writeFile(file, lines.join('\n') + '\n')
  return file
}

const count = (stdout: string, what: string): number => Number(new RegExp(`${what}\\s+([\\d,]+)`).exec(stdout)?.[1].replace(/,/g, ''))

const N = 3000
const BATCH = 100
/**
 * At most: the rows read at once (a thousand), the batch being filled and the two with the
 * catalogue, and the refusals waiting for those to be said (five hundred). Below N: an import that
 * held every row of the file could not stay within it.
 */
const HELD_AT_MOST = 1000 + 3 * BATCH + 500
/** A Map or Set of a slice of rows (a thousand) at most; also below N. */
const ENTRIES_AT_MOST = 1000

/**
 * What `fn` returns, and the most entries any one Map or Set held while it ran: a Map of every SKU
 * of the file (or a Set of its ids, its names) holds as many as the file has rows.
 */
async function withLargestCollection<T> (fn: () => Promise<T>): Promise<{ result: T, entries: number }> {
  const { set } = Map.prototype
  const { add } = Set.prototype
  let entries = 0
  // Counted for this call alone, and put back after it.
  // eslint-disable-next-line no-extend-native
  Map.prototype.set = function <K, V>(this: Map<K, V>, key: K, value: V) {
    set.call(this, key, value)
    entries = Math.max(entries, this.size)
    return this
  }
  // eslint-disable-next-line no-extend-native
  Set.prototype.add = function <V>(this: Set<V>, value: V) {
    add.call(this, value)
    entries = Math.max(entries, this.size)
    return this
  }
  try {
    return { result: await fn(), entries }
  } finally {
    // eslint-disable-next-line no-extend-native
    Map.prototype.set = set
    // eslint-disable-next-line no-extend-native
    Set.prototype.add = add
  }
}

const TARGETS = [
  { name: 'a data folder', skip: false as const, make: async (dir: string) => ({ args: ['--data-dir', join(dir, 'data')], env: {} }) },
  {
    name: 'PostgreSQL',
    skip: TEST_DATABASE_URL ? false as const : 'TEST_DATABASE_URL is not set',
    make: async (_dir: string, t: TestContext) => {
      const scratch = await freshSchema()
      t.after(() => scratch.drop())
      return { args: [], env: { DATABASE_URL: scratch.url } }
    }
  }
]

for (const target of TARGETS) {
  test(`an import and its dry run hold at most ${HELD_AT_MOST} rows at once, and no Map or Set of a row each, of a file of ${N} rows as of one of ${4 * N} (${target.name})`, { skip: target.skip }, async (t) => {
    for (const n of [N, 4 * N]) {
      const dir = await tempDir(t)
      const at = await target.make(dir, t)
      const file = await generated(dir, n)
      const run = async (...args: string[]): Promise<{ stdout: string, peak: number, entries: number }> => {
        lastImport.peakRows = 0
        const { result, entries } = await withLargestCollection(() => plants(['import', file, ...args, ...at.args, '--batch-size', String(BATCH)], at.env))
        assert.equal(result.code, 1, result.stderr.slice(0, 2000))
        return { stdout: result.stdout, peak: lastImport.peakRows, entries }
      }
      const dry = await run('--dry-run')
      assert.deepEqual([count(dry.stdout, 'would be added'), count(dry.stdout, 'rejected')], [n - n / 50, n / 50])
      const real = await run('--create')
      assert.deepEqual([count(real.stdout, 'added'), count(real.stdout, 'rejected')], [n - n / 50, n / 50])
      // Again: every new plant's record is held by the catalogue now, and counted for the whole file.
      const again = await run('--dry-run')
      assert.deepEqual([count(again.stdout, 'would be added'), count(again.stdout, 'unchanged'), count(again.stdout, 'rejected')], [0, n - n / 50, n / 50])
      for (const [what, { peak, entries }] of Object.entries({ dry, real, again })) {
        assert.ok(peak >= BATCH && peak <= HELD_AT_MOST, `${n} rows, ${what}: ${peak} rows held at once`)
        assert.ok(entries <= ENTRIES_AT_MOST, `${n} rows, ${what}: a Map or Set of ${entries} entries`)
      }
    }
  })
}

test('a dry run into a slow pipe waits for it: what waits to be written stays within the pipe\'s high-water mark', async (t) => {
  const dir = await tempDir(t)
  const HIGH_WATER = 16 * 1024
  for (const n of [N, 4 * N]) {
    const file = await generated(dir, n)
    let waiting = 0
    let lines = 0
    // Takes a line a turn of the event loop, as a pipe to a slower reader (a pager, a grep) does.
    const stdout = new Writable({
      highWaterMark: HIGH_WATER,
      write (chunk, _encoding, done) {
        waiting = Math.max(waiting, this.writableLength)
        lines += String(chunk).split('\n').length - 1
        setImmediate(done)
      }
    })
    const stderr = new Writable({ write (_chunk, _encoding, done) { done() } })
    assert.equal(await main(['import', file, '--data-dir', join(dir, 'none'), '--dry-run'], { stdout, stderr, env: {} }), 1)
    await new Promise((resolve) => stdout.end(resolve))
    assert.equal(lines, n - n / 50 + 8, 'a line a row that would be added, and the summary\'s eight')
    assert.ok(waiting <= HIGH_WATER + 1024, `${n} rows: ${waiting} bytes waited to be written at once`)
  }
})

test('a dry run\'s heap, after collection, is no larger for a file four times as long', async (t) => {
  // A net for what the test above cannot see (rows kept in arrays, text kept whole): the live heap,
  // after a full collection at eight points of each run. Its bound is loose, some 110 bytes a row:
  // the Maps of the import before it was bounded came to a few hundred bytes a row, but V8 freed some as
  // their last use passed, and its figures moved by up to 15 MB from run to run (the test above is
  // the one that failed it). The reader's buffers are full long before 12,000 rows.
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const dir = await tempDir(t)
  const peakOf = async (n: number): Promise<number> => {
    const file = await generated(dir, n)
    let lines = 0
    let peak = 0
    const stdout = new Writable({
      write (chunk, _encoding, done) {
        const text = String(chunk)
        for (let k = text.indexOf('\n'); k >= 0; k = text.indexOf('\n', k + 1)) {
          if (++lines % (n / 8) !== 0) continue
          gc()
          peak = Math.max(peak, process.memoryUsage().heapUsed)
        }
        done()
      }
    })
    // Nothing kept of what is said: the test's own memory stays out of the figures.
    const stderr = new Writable({ write (_chunk, _encoding, done) { done() } })
    const code = await main(['import', file, '--data-dir', join(dir, 'none'), '--dry-run'], { stdout, stderr, env: {} })
    assert.equal(code, 1)
    return peak
  }
  await peakOf(1200) // every module loaded and compiled first
  const small = await peakOf(12_000)
  const large = await peakOf(48_000)
  assert.ok(large - small < 4e6, `heap ${(small / 1e6).toFixed(1)} MB at 12,000 rows, ${(large / 1e6).toFixed(1)} MB at 48,000`)
})
