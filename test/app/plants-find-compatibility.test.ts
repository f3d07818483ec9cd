import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { foldKey } from '../../src/catalogue/search-key.js'
import { parseTerms } from '../../src/plants/query.js'
import { clientConfig } from '../../src/store/postgres/connection.js'
import { loadMigrations, migrate as migratePostgres } from '../../src/store/postgres/migrate.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { COMPATIBILITY_FOLD_VERSION, migrate as migrateSqlite } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// q folds compatibility forms (NFKC's folding, search-key.ts foldKey): a full-width "ｆｉｃｕｓ" or a
// ligature "ﬁcus" finds "ficus" and is found by it, on both engines, in terms and in names alike.

interface Answer { statusCode: number, body: string, json: () => any }
type Get = (url: string) => Promise<Answer>
const getter = (api: TestApp): Get => async (url) => await api.request({ method: 'GET', url })
const names = async (get: Get, query: string): Promise<string[]> => {
  const res = await get(`/v3/plant?${query}`)
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return res.json().items.map((p: { name: string }) => p.name)
}
const q = (term: string): string => `q=${encodeURIComponent(term)}`

test('foldKey folds full-width letters, ligatures and compatibility capitals to plain lower-case letters, accents off', () => {
  for (const form of ['ficus', 'FICUS', 'ｆｉｃｕｓ', 'ＦＩＣＵＳ', 'ﬁcus', 'Ficus'.normalize('NFD'), 'fícus']) assert.equal(foldKey(form.toLowerCase()), 'ficus', form)
  assert.equal(foldKey('ℌedera'.toLowerCase()), 'hedera', 'a black-letter capital decomposes to a capital H: lower-cased again')
  assert.equal(foldKey('ﬃ'), 'ffi')
  assert.equal(foldKey('ø ß æ'), 'ø ß æ', 'letters without a decomposition stay themselves')
})

test('foldKey is stable: folding a folded key again changes nothing, for every code point', () => {
  const unstable: string[] = []
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue
    const once = foldKey(String.fromCodePoint(cp).toLowerCase())
    if (foldKey(once) !== once || /\p{M}/u.test(once)) unstable.push(cp.toString(16))
  }
  assert.deepEqual(unstable, [])
})

test('a term a compatibility form splits into two (a spacing accent folds to a space) is two terms; one of accents alone is refused', () => {
  assert.deepEqual(parseTerms('ｆｉｃｕｓ'), ['ficus'])
  assert.deepEqual(parseTerms('fi\u00a8cus'), ['fi', 'cus'])
  assert.throws(() => parseTerms('\u00a8'), /other than an accent/)
})

for (const engine of ENGINES) {
  describe(`q folds compatibility forms on ${engine.name}`, { skip: engine.skip }, () => {
    test('"ｆｉｃｕｓ" and "ﬁcus" find "Ficus", and "ficus" finds them; short terms too', async (t) => {
      const api = await build(t, engine)
      const get = getter(api)
      for (const name of ['Ficus lyrata', 'ｆｉｃｕｓ benjamina', 'ﬁcus elastica', 'ＦＩＧ tree', 'Fern']) await api.add({ name })
      const ficuses = ['Ficus lyrata', 'ｆｉｃｕｓ benjamina', 'ﬁcus elastica']
      assert.deepEqual(await names(get, q('ficus')), ficuses)
      assert.deepEqual(await names(get, q('ｆｉｃｕｓ')), ficuses)
      assert.deepEqual(await names(get, q('ﬁcus')), ficuses)
      assert.deepEqual(await names(get, q('ＦＩＣＵＳ')), ficuses)
      assert.deepEqual(await names(get, q('ﬁ')), [...ficuses, 'ＦＩＧ tree'], 'the ligature is the short term "fi", at word starts')
      assert.deepEqual(await names(get, q('fig')), ['ＦＩＧ tree'])
      assert.deepEqual(await names(get, `${q('ｅｌａｓｔ')}&sort=name`), ['ﬁcus elastica'])
      assert.deepEqual((await get(`/v3/plant/count?${q('ｆｉ')}`)).json(), { count: 4, exact: true })
      // A rename moves the plant out of the old term's matches and into the new one's.
      await api.request({ method: 'PATCH', url: '/v3/plant/1', payload: { name: 'Ｍｏｎｓｔｅｒａ' } })
      assert.deepEqual(await names(get, q('ficus')), ficuses.slice(1))
      assert.deepEqual(await names(get, q('monstera')), ['Ｍｏｎｓｔｅｒａ'])
    })
  })
}

// Catalogues written before: their search texts were folded without the compatibility forms.
const OLD_NAMES = ['ｆｉｃｕｓ benjamina', 'ﬁcus elastica', 'Fern']
async function checkFound (store: PlantStore): Promise<void> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const get: Get = async (url) => await app.inject({ method: 'GET', url })
    assert.deepEqual(await names(get, q('ficus')), OLD_NAMES.slice(0, 2))
    assert.deepEqual(await names(get, q('fi')), OLD_NAMES.slice(0, 2))
    assert.deepEqual(await names(get, q('fern')), ['Fern'])
  } finally {
    await app.close()
  }
}

/** A name key folded as the release before folded it (accents off, compatibility forms kept): what its index held. */
const oldFold = (key: string): string => key.normalize('NFD').replace(/\p{M}/gu, '')

test(`SQLite migration ${COMPATIBILITY_FOLD_VERSION + 1}: the search index is built anew, with a progress line on a large catalogue, and finds the names by their folded forms`, async (t) => {
  const dir = tempDir('plants-migrate-compatibility')
  t.after(dir.remove)
  const db = connect(`${dir.path}/catalogue.db`)
  migrateSqlite(db, () => {}, COMPATIBILITY_FOLD_VERSION)
  const insert = db.prepare("INSERT INTO plants (name, name_key, tags, status, version, created_at, updated_at) VALUES (?, ?, '[]', 'available', 1, 0, 0)")
  const index = db.prepare('INSERT INTO plants_fts (rowid, search) VALUES (?, ?)')
  db.transaction(() => {
    for (const name of OLD_NAMES) index.run(insert.run(name, name.toLowerCase()).lastInsertRowid, oldFold(name.toLowerCase()))
    for (let i = 0; i < 60_000; i++) index.run(insert.run(`Palm ${i}`, `palm ${i}`).lastInsertRowid, oldFold(`palm ${i}`))
  })()
  db.close()
  const lines: string[] = []
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000, progress: (line) => lines.push(line) })
  t.after(() => store.close())
  assert.ok(lines.some((l) => l.includes('search index 60003 of 60003 plants (full-width letters and ligatures folded)')), lines.join('\n'))
  await checkFound(store)
  const check = connect(`${dir.path}/catalogue.db`)
  t.after(() => check.close())
  check.exec("INSERT INTO plants_fts (plants_fts, rank) VALUES ('integrity-check', 1)")
})

test('PostgreSQL migration 012: names beyond ASCII get their search columns again at start-up, folded the new way', { skip: postgresEngine.skip }, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  await migratePostgres(clientConfig(scratch.url, { operationMs: 60_000, connectMs: 5_000 }), loadMigrations().filter((m) => m.version < 12))
  // As the release before filled them: folded without the compatibility forms.
  await adminQuery(`INSERT INTO ${scratch.name}.plants (id, name, name_key, tags, status, version, created_at, updated_at, search_key, search_starts) OVERRIDING SYSTEM VALUE
    SELECT i, n, lower(n), '{}', 'available', 1, 0, 0, k, s::text[] FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS v (n, k, s, i)`,
  [OLD_NAMES, OLD_NAMES.map((n) => oldFold(n.toLowerCase())), OLD_NAMES.map((n) => `{${[...new Set(n.toLowerCase().split(' ').map((w) => [...w].slice(0, 2).join('')))].join(',')}}`)])
  const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, startWaitMs: 60_000 })
  t.after(() => store.close())
  const rows = await adminQuery(`SELECT name, search_key FROM ${scratch.name}.plants ORDER BY id`)
  assert.deepEqual(rows.map((r) => r.search_key), ['ficus benjamina', 'ficus elastica', 'fern'])
  await checkFound(store)
})
