import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { FILE_CHUNK_BYTES } from '../../src/catalogue/photo.js'
import { migrate } from '../../src/store/sqlite/migrations.js'
import { DANGLING_PHOTO_FILES, storedPhotoFiles } from '../../src/store/sqlite/photo-writes.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { wholeFile } from '../helpers/photo-files.js'
import { tempDir } from '../helpers/process.js'

// SQLite migration 9 moves each photo file's bytes into chunks: a catalogue with
// photos from before serves the same bytes after, and the column that held them whole is gone.

test('SQLite migration 9: files stored whole are split into chunks with their sizes; every photo keeps its bytes', async (t) => {
  const dir = tempDir('plants-photo-chunks')
  t.after(dir.remove)
  const db = connect(`${dir.path}/catalogue.db`)
  migrate(db, () => {}, 8)
  const files = [randomBytes(2 * FILE_CHUNK_BYTES + 17), randomBytes(900), randomBytes(FILE_CHUNK_BYTES)]
  const names = files.map((bytes, i) => `${createHash('sha256').update(bytes).digest('base64url')}.${['png', 'webp', 'webp'][i]}`)
  const [full, display, thumb] = names.map((name) => `/v3/photos/${name}`)
  const photo = { id: 'AAAAAAAAAAAAAAAA', width: 1, height: 1, urls: { thumb, display, full } }
  db.prepare("INSERT INTO plants (name, name_key, tags, status, version, created_at, updated_at, photos) VALUES ('Monstera', 'monstera', '[]', 'available', 2, 0, 0, ?)").run(JSON.stringify([photo]))
  files.forEach((bytes, i) => db.prepare('INSERT INTO photo_files (name, refs, bytes) VALUES (?, 1, ?)').run(names[i], bytes))
  db.close()

  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  t.after(() => store.close())
  assert.ok(await store.schemaVersion() >= 9)
  for (const [i, name] of names.entries()) {
    assert.deepEqual(await store.photoFile(name), { size: files[i].length })
    assert.deepEqual(await wholeFile(store, name), files[i], name)
  }
  assert.deepEqual((await store.photoFile(names[0], 2))?.chunk?.length, 17, 'the last chunk holds the rest')

  const check = connect(`${dir.path}/catalogue.db`)
  t.after(() => check.close())
  assert.deepEqual(check.prepare('SELECT name, count(*) AS n FROM photo_file_chunks GROUP BY name ORDER BY n DESC').all().map((r: any) => r.n), [3, 1, 1])
  assert.equal((check.prepare("SELECT count(*) AS n FROM pragma_table_info('photo_files') WHERE name = 'bytes'").get() as { n: number }).n, 0, 'the whole-file column is gone')
  assert.equal(check.prepare(DANGLING_PHOTO_FILES).pluck().get(), 0)
  const whole = new Map([...storedPhotoFiles(check)].map((f) => [f.name, f.bytes]))
  assert.deepEqual(names.map((name) => whole.get(name)), files, 'read back whole for a copy elsewhere')
})
