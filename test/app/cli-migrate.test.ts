import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { SkuTaken } from '../../src/catalogue/errors.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { plants } from '../../scripts/lib/cli-harness.js'
import { processImage } from '../../src/photos/images.js'
import type { NewPhoto } from '../../src/catalogue/photo.js'
import { freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { picture } from '../helpers/pictures.js'
import { wholeFile } from '../helpers/photo-files.js'

const DAY = 86_400_000
const all = (store: PlantStore) => store.list({ afterId: 0, limit: 100_000 })

async function photoOf (bytes: Buffer, id: string): Promise<NewPhoto> {
  const p = await processImage(bytes, 'image/png')
  const files = [p.thumb, p.display, p.full]
  const [thumb, display, full] = files.map((f) => `/v3/photos/${f.name}`)
  return { photo: { id, width: p.width, height: p.height, urls: { thumb, display, full } }, files }
}

test('migrate copies a catalogue into PostgreSQL with ids, versions, the id sequence, the feed and idempotency keys, and verifies it', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set (.ci/run sets it when PostgreSQL is installed)'
}, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-migrate-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const sqlite = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  const claim = { key: 'retry-me', requestHash: 'h1' }
  const kept = await sqlite.create({ name: 'Monstera', category: 'indoor', tags: ['large', 'green'], status: 'available' }, claim)
  await sqlite.create({ name: 'NUL \u0000 and \uffff inside', category: 'c\u0000', tags: ['t\u0000', '\uffff'], status: 'pending' })
  for (let i = 0; i < 1200; i++) await sqlite.create({ name: `Plant ${i}`, category: i % 2 ? null : 'even', tags: i % 3 ? [] : ['third'], status: 'sold' })
  await sqlite.update(kept.plant.id, { name: 'Monstera deliciosa', category: 'indoor', tags: ['large'], status: 'sold' })
  await sqlite.update(kept.plant.id, {
    name: 'Monstera deliciosa', category: 'indoor', tags: ['large', 'rare'], status: 'sold', description: 'NUL \u0000 in the text', price: '999999999.99', sku: 'Mon-1', barcode: '4006381333931'
  })
  await sqlite.patch(3, { price: '0.01', barcode: '4006381333931' })
  // Photos: one picture on two plants (its three files counted twice), another on one.
  const shared = await photoOf(await picture('png', 1, 300), 'sharedsharedshar')
  await sqlite.addPhoto(kept.plant.id, shared)
  await sqlite.addPhoto(2, { ...shared, photo: { ...shared.photo, id: 'sharedsecondcopy' } })
  const own = await photoOf(await picture('png', 2, 300), 'ownownownownownx')
  await sqlite.addPhoto(2, own)
  const last = (await all(sqlite)).at(-1)!
  const trashedPhoto = await photoOf(await picture('png', 3, 300), 'trashtrashtrash1')
  await sqlite.addPhoto(last.id, trashedPhoto)
  await sqlite.remove(last.id) // the highest id is gone (to the trash, with its photo), but must never be handed out again
  const trashed = await sqlite.trash(undefined, 10)
  assert.equal(trashed.length, 1)
  const source = await all(sqlite)
  const feed = await sqlite.changes(0, 10_000)
  const histories = { kept: await sqlite.history(kept.plant.id, undefined, 100), trashed: await sqlite.history(last.id, undefined, 100) }
  assert.equal(histories.kept!.length, 4)
  const inventory = await sqlite.inventory()
  assert.deepEqual(inventory, { available: 0, pending: 1, sold: 1200, units: { onHand: 0, reserved: 0, available: 0 } })
  await sqlite.close()

  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const result = await plants(['migrate', '--to', scratch.url, '--data-dir', dataDir, '--batch-size', '500'])
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, /plants +1,201 \(last id handed out 1202; available 0, pending 1, sold 1200\)/)
  assert.match(result.stdout, /photo files +9\n/)
  assert.match(result.stdout, /in the trash +1\n/)
  assert.match(result.stdout, /history +1,210 versions\n/)
  assert.match(result.stdout, /verified/)

  const pg = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 7 * DAY })
  t.after(() => pg.close())
  assert.deepEqual(await all(pg), source, 'every plant, with its id, version and exact strings')
  assert.deepEqual(await pg.inventory(), inventory, 'the inventory counts what was copied')
  assert.deepEqual(await pg.get(kept.plant.id), source.find((p) => p.id === kept.plant.id))
  assert.deepEqual(await pg.list({ afterId: 0, limit: 10, tags: ['rare'] }), source.filter((p) => p.tags.includes('rare')), 'tag index rebuilt')
  assert.deepEqual((await pg.list({ afterId: 0, limit: 10, tags: ['t\u0000'] })).map((p) => p.id), [2], 'strings with U+0000 filter as on SQLite')
  // The store fields and times came along, with their indexes: a SKU is found and still unique, prices sort.
  assert.deepEqual((await pg.list({ afterId: 0, limit: 10, sku: 'MON-1' })).map((p) => p.id), [kept.plant.id])
  assert.deepEqual((await pg.list({ afterId: 0, limit: 2, sort: '-price', priceMin: 1 })).map((p) => p.price), ['999999999.99', '0.01'])
  assert.deepEqual((await pg.list({ afterId: 0, limit: 10, barcode: '4006381333931' })).map((p) => p.id), [kept.plant.id, 3])
  await assert.rejects(pg.create({ name: 'Copy', category: null, tags: [], status: 'available', sku: 'mon-1' }), SkuTaken)
  assert.deepEqual(await pg.changes(0, 10_000), feed, 'the change feed, with its sequence numbers')
  // The history came along: a plant's versions read the same, one in the trash too.
  assert.deepEqual({ kept: await pg.history(kept.plant.id, undefined, 100), trashed: await pg.history(last.id, undefined, 100) }, histories)
  for (const file of [...shared.files, ...own.files]) assert.deepEqual(await wholeFile(pg, file.name), file.bytes, file.name)
  // The reference counts came along: removing one of the two copies keeps the shared files.
  await pg.removePhoto(2, 'sharedsecondcopy')
  assert.ok(await pg.photoFile(shared.files[0].name))
  await pg.removePhoto(kept.plant.id, 'sharedsharedshar')
  assert.equal(await pg.photoFile(shared.files[0].name), undefined)
  const replay = await pg.create({ name: 'Monstera', category: 'indoor', tags: ['large', 'green'], status: 'available' }, claim)
  assert.equal(replay.replayed, true)
  assert.equal(replay.plant.id, kept.plant.id)
  const next = await pg.create({ name: 'First on PostgreSQL', category: null, tags: [], status: 'available' })
  assert.equal(next.plant.id, last.id + 1, 'the id sequence carries on after the highest id ever handed out')
  assert.equal((await pg.changes(feed.next, 10)).items[0].seq, feed.next + 1, 'the feed carries on from its head')

  // The trash came along, with its photo's files: a restore there brings the plant back whole.
  assert.deepEqual(await pg.trash(undefined, 10), trashed)
  const restored = await pg.restoreTrashed(last.id)
  assert.deepEqual(restored.photos, [trashedPhoto.photo])
  for (const file of trashedPhoto.files) assert.deepEqual(await wholeFile(pg, file.name), file.bytes, file.name)

  const again = await plants(['migrate', '--to', scratch.url, '--data-dir', dataDir])
  assert.equal(again.code, 1)
  assert.match(again.stderr, /already holds a catalogue/)
})

test('migrate commits nothing when the service writes during the copy, and says so; run again once writes stop, it copies all', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set (.ci/run sets it when PostgreSQL is installed)'
}, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-migrate-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const sqlite = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  t.after(() => sqlite.close())
  for (let i = 0; i < 2000; i += 500) {
    await sqlite.batch(Array.from({ length: 500 }, (_, j) => ({ op: 'create', fields: { name: `Plant ${i + j}`, category: null, tags: [], status: 'available' } }) as const))
  }
  const target = await freshSchema()
  t.after(target.drop)
  // The service goes on writing while migrate copies, a batch of 100 a time.
  let writing = true
  let written = 0
  const writes = (async () => {
    while (writing) { await sqlite.create({ name: `Late ${written}`, category: null, tags: [], status: 'available' }); written++ }
  })()
  const during = await plants(['migrate', '--data-dir', dataDir, '--to', target.url, '--batch-size', '100'])
  writing = false
  await writes
  assert.ok(written > 0)
  assert.equal(during.code, 1)
  assert.match(during.stderr, /changes? reached the data folder during the copy, so nothing was committed and .* is left empty: stop the service's writes and run migrate again/)
  assert.doesNotMatch(during.stdout, /verified/)
  const after = await plants(['migrate', '--data-dir', dataDir, '--to', target.url])
  assert.equal(after.code, 0, after.stderr)
  assert.match(after.stdout, new RegExp(`plants +${(2000 + written).toLocaleString('en')} `))
})

test('migrate refuses a URL that is not PostgreSQL and a folder without a catalogue', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-migrate-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  assert.equal((await plants(['migrate', '--to', 'mysql://x/y', '--data-dir', dir])).code, 2)
  assert.equal((await plants(['migrate', '--data-dir', dir])).code, 2)
  const none = await plants(['migrate', '--to', 'postgres://127.0.0.1:1/none', '--data-dir', dir])
  assert.equal(none.code, 1)
  assert.match(none.stderr, /no catalogue in/)
})

test('migrate copies the API keys by their hash, with scope, times and revocation: a client keeps its key, a revoked one stays refused', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set (.ci/run sets it when PostgreSQL is installed)'
}, async (t) => {
  const { createKey } = await import('../../src/keys/manage.js')
  const { hashOf } = await import('../../src/keys/secrets.js')
  const dir = await mkdtemp(join(tmpdir(), 'plants-migrate-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const sqlite = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  await sqlite.create({ name: 'Monstera', category: null, tags: [], status: 'available' })
  const now = Date.now()
  const till = await createKey(sqlite.keys, 'till-3', 'sell', now + 30 * DAY + 123, now)
  const old = await createKey(sqlite.keys, 'till-3.old', 'sell', null, now - 7)
  await sqlite.keys.touch(new Map([['till-3', now + 1]]))
  await sqlite.keys.revoke('till-3.old', now + 2)
  const before = await sqlite.keys.list()
  await sqlite.close()

  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const result = await plants(['migrate', '--to', scratch.url, '--data-dir', dataDir])
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, /API keys +2\n/)
  const pg = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 7 * DAY })
  t.after(() => pg.close())
  assert.deepEqual(await pg.keys.list(), before)
  assert.deepEqual(await pg.keys.byHash(hashOf(till.secret)), { name: 'till-3', scope: 'sell', expiresAt: now + 30 * DAY + 123, revoked: false })
  assert.equal((await pg.keys.byHash(hashOf(old.secret)))?.revoked, true)
})

test('migrate copies the webhooks with their ids, secrets, place in the feed, attempt state and log: each resumes at its place in the feed, signing with the same secrets', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set (.ci/run sets it when PostgreSQL is installed)'
}, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-migrate-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const sqlite = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  const now = Date.now()
  const shop = await sqlite.webhooks.create({ url: 'https://shop.example/hooks', events: ['created', 'updated'], secret: 'whsec_c2hvcC1zZWNyZXQtb25lLXNob3Atc2VjcmV0' }, now)
  const till = await sqlite.webhooks.create({ url: 'https://till.example/in', events: ['deleted'], secret: 'whsec_dGlsbC1zZWNyZXQtb25lLXRpbGwtc2VjcmV0' }, now)
  const gone = await sqlite.webhooks.create({ url: 'https://gone.example/', events: ['created'], secret: 'whsec_Z29uZS1zZWNyZXQtZ29uZS1zZWNyZXQtZ29uZQ' }, now)
  await sqlite.webhooks.remove(gone.id) // its id must never be handed out again
  for (let i = 0; i < 3; i++) await sqlite.create({ name: `Plant ${i}`, category: null, tags: [], status: 'available' })
  // The shop's receiver had the first two changes; its secret was rotated, the old one still signing.
  await sqlite.webhooks.rotateSecret(shop.id, 'whsec_c2hvcC1zZWNyZXQtdHdvLXNob3Atc2VjcmV0LXR3', now + 1, now + DAY)
  await sqlite.webhooks.recordAttempts(shop.id, [
    { seq: 1, attempt: 1, at: now + 2, statusCode: 200, error: null, durationMs: 12 },
    { seq: 2, attempt: 1, at: now + 3, statusCode: 200, error: null, durationMs: 9 }
  ], { cursor: 2, attempts: 0, nextAttemptAt: null, failingSince: null, lastError: null, failing: false })
  // The till's receiver is failing at the next change, and paused.
  await sqlite.webhooks.recordAttempts(till.id, [{ seq: 1, attempt: 1, at: now + 4, statusCode: 503, error: 'HTTP 503', durationMs: 30 }],
    { cursor: 0, attempts: 1, nextAttemptAt: now + 60_000, failingSince: now + 4, lastError: 'HTTP 503', failing: false })
  await sqlite.webhooks.update(till.id, { status: 'paused' })
  const before = await sqlite.webhooks.list()
  const logs = [await sqlite.webhooks.deliveries(shop.id, { limit: 100 }), await sqlite.webhooks.deliveries(till.id, { limit: 100 })]
  assert.equal(before.length, 2)
  assert.equal(before[0].previousSecret, shop.secret)
  await sqlite.close()

  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const result = await plants(['migrate', '--to', scratch.url, '--data-dir', dataDir])
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, /webhooks +2 \(with their secrets and places in the feed; 3 attempts in their logs\)\n/)
  assert.match(result.stdout, /of the webhooks match the source/)
  const pg = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 7 * DAY })
  t.after(() => pg.close())
  assert.deepEqual(await pg.webhooks.list(), before, 'every webhook, with its id, secrets, events, status, cursor and attempt state')
  assert.deepEqual([await pg.webhooks.deliveries(shop.id, { limit: 100 }), await pg.webhooks.deliveries(till.id, { limit: 100 })], logs)
  const lag = await pg.webhooks.lag()
  assert.deepEqual(lag.map((l) => [l.id, l.cursor, l.head]), [[shop.id, 2, 3], [till.id, 0, 3]], 'each resumes at its place in the feed')
  assert.equal(await pg.webhooks.lease(shop.id, 'first-instance', Date.now() + 10_000, Date.now()), true, 'no lease came along: the first instance takes it')
  const made = await pg.webhooks.create({ url: 'https://new.example/', events: ['created'], secret: 'whsec_bmV3LXNlY3JldC1uZXctc2VjcmV0LW5ldy1zZWNy' }, Date.now())
  assert.equal(made.id, gone.id + 1, 'a webhook made after the move gets an id never handed out')
  await pg.webhooks.recordAttempts(shop.id, [{ seq: 3, attempt: 1, at: Date.now(), statusCode: 200, error: null, durationMs: 5 }],
    { cursor: 3, attempts: 0, nextAttemptAt: null, failingSince: null, lastError: null, failing: false })
  assert.equal((await pg.webhooks.deliveries(shop.id, { limit: 1 }))[0].seq, 3, 'the log carries on after the copied attempts')
})
