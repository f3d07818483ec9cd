import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { HistoryEntry } from '../../src/catalogue/history.js'
import type { Plant } from '../../src/catalogue/plant.js'
import { exportedAt, recordAt as baseAt, type ExportedAt } from '../../src/cli/import-base.js'

// What a plant was when its file was exported, from its history: the changes after the export's
// updatedAt undone, newest first (the import writes only the cells edited in the file).

const plant: Plant = {
  id: 7,
  name: 'Fern',
  category: 'indoor',
  tags: ['green'],
  status: 'sold',
  description: null,
  price: '4.50',
  sku: null,
  barcode: null,
  stock: null,
  lowStockAt: null,
  photos: [],
  createdAt: '2026-11-01T09:00:00.000Z',
  updatedAt: '2026-11-27T12:00:02.500Z',
  version: 5
}
const entry = (version: number, at: string, changes: HistoryEntry['changes'], kind: HistoryEntry['kind'] = 'updated'): HistoryEntry => ({ version, at, actor: 'till', kind, changes })
const HISTORY: HistoryEntry[] = [
  entry(4, '2026-11-27T12:00:02.500Z', { status: ['available', 'sold'] }),
  entry(3, '2026-11-27T12:00:01.200Z', { price: ['4.00', '4.50'], tags: [[], ['green']] }),
  entry(2, '2026-11-27T11:00:00.000Z', { category: [null, 'indoor'] }),
  entry(1, '2026-11-01T09:00:00.000Z', { name: [null, 'Fern'] }, 'created')
]
async function * pages (entries: HistoryEntry[], size = 2): AsyncGenerator<HistoryEntry[]> {
  for (let i = 0; i < entries.length; i += size) yield entries.slice(i, i + size)
}
const at = (text: string): ExportedAt => exportedAt(text) as ExportedAt
const recordAt = async (...args: Parameters<typeof baseAt>): Promise<Plant | undefined> => (await baseAt(...args))?.fields

test('the plant at the export: every change after it undone, across pages, and nothing before it', async () => {
  assert.deepEqual(await recordAt(plant, at('2026-11-27T11:30:00.000Z'), pages(HISTORY)),
    { ...plant, status: 'available', price: '4.00', tags: [] })
  assert.deepEqual(await recordAt(plant, at('2026-11-27T12:00:01.200Z'), pages(HISTORY)), { ...plant, status: 'available' }, 'exported at the version itself')
  assert.deepEqual(await recordAt(plant, at('2026-11-27T12:00:05.000Z'), pages(HISTORY)), plant, 'nothing since')
})

test('a time kept to the second (a spreadsheet dropped the milliseconds) counts a change within that second as before it', async () => {
  assert.deepEqual(await recordAt(plant, at('2026-11-27T12:00:01Z'), pages(HISTORY)), { ...plant, status: 'available' })
  assert.deepEqual(await recordAt(plant, at('2026-11-27T13:00:01+01:00'), pages(HISTORY)), { ...plant, status: 'available' }, 'an offset is a time like any other')
})

test('undefined when the history no longer reaches the export, or the plant was made since', async () => {
  assert.equal(await recordAt(plant, at('2026-11-27T11:30:00.000Z'), pages(HISTORY.slice(0, 2))), undefined, 'older versions forgotten')
  assert.equal(await recordAt(plant, at('2026-10-01T00:00:00.000Z'), pages(HISTORY)), undefined, 'exported before the plant was made')
})

test('who changed each field since, and when: the newest change of it', async () => {
  assert.deepEqual([...(await baseAt(plant, at('2026-11-27T11:30:00.000Z'), pages(HISTORY)))!.changedBy],
    [['status', 'by till, 2026-11-27T12:00:02.500Z'], ['price', 'by till, 2026-11-27T12:00:01.200Z'], ['tags', 'by till, 2026-11-27T12:00:01.200Z']])
})

test('a history that ends after the export is whole when the catalogue keeps every version since before the export', async () => {
  const kept = Date.parse('2026-11-27T00:00:00.000Z')
  assert.deepEqual(await recordAt(plant, at('2026-11-27T11:30:00.000Z'), pages(HISTORY.slice(0, 2)), kept), { ...plant, status: 'available', price: '4.00', tags: [] })
  assert.equal(await recordAt(plant, at('2026-11-26T23:00:00.000Z'), pages(HISTORY.slice(0, 2)), kept), undefined, 'exported before what is kept for sure')
})

test('a move to the trash and back changes no field and is stepped over; two versions in the second of a time without milliseconds cannot be told apart', async () => {
  const restored = [entry(6, '2026-11-27T12:10:00.000Z', {}, 'restored'), entry(5, '2026-11-27T12:05:00.000Z', {}, 'deleted'), ...HISTORY]
  assert.deepEqual(await recordAt(plant, at('2026-11-27T12:00:02.500Z'), pages(restored)), plant)
  assert.deepEqual(await recordAt(plant, at('2026-11-27T11:30:00.000Z'), pages(restored)), { ...plant, status: 'available', price: '4.00', tags: [] })
  const sameSecond = [entry(5, '2026-11-27T12:00:02.900Z', { status: ['pending', 'sold'] }), entry(4, '2026-11-27T12:00:02.100Z', { status: ['available', 'pending'] }), ...HISTORY.slice(1)]
  assert.equal(await recordAt(plant, at('2026-11-27T12:00:02Z'), pages(sameSecond)), undefined)
  assert.deepEqual(await recordAt(plant, at('2026-11-27T12:00:02.100Z'), pages(sameSecond)), { ...plant, status: 'pending' }, 'with milliseconds it can')
})

test('a revert since the export is undone as an update is: its fields go back to what they were before it', async () => {
  // Version 5 went back to version 3's status; the file was exported at version 4.
  const reverted = [entry(5, '2026-11-27T12:20:00.000Z', { status: ['sold', 'available'] }, 'reverted'), ...HISTORY]
  assert.deepEqual(await recordAt({ ...plant, status: 'available', version: 5 }, at('2026-11-27T12:00:02.500Z'), pages(reverted)), { ...plant, status: 'sold', version: 5 })
})

test('an updatedAt that is not a time the export writes is refused, saying to export again', () => {
  for (const bad of ['27/11/2026 10:00', '2026-11-27 10:00:00', '2026-11-27T10:00:00', 'yesterday', 1732700000000]) {
    const refused = exportedAt(bad)
    assert.ok(refused !== undefined && 'invalid' in refused, String(bad))
    assert.match(refused.invalid, /^\/updatedAt must be the time plants export wrote \(like 2026-11-27T16:38:19.223Z\), not .*: export again, and keep that column as text if a spreadsheet opens the file$/)
  }
  assert.equal(exportedAt(undefined), undefined)
  assert.deepEqual(exportedAt('2026-11-27T12:00:02.500Z'), { ms: Date.parse(plant.updatedAt), second: false })
})
