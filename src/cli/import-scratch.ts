import Database from 'better-sqlite3'
import type { Plant } from '../catalogue/plant.js'
import type { IdSet } from './target-interface.js'
import { CommandFailed } from './command.js'
import type { Given, Known, SoFar } from './import-plan.js'

// What an import learns of its file and of the catalogue, kept on disk instead of in memory: the
// file's ids, SKUs and new plants' names (read before anything is written), the plants its rows
// name as the catalogue had them, and what earlier rows did (the plants they named, the SKUs they
// gave). Held in Maps and Sets, all of it grew with the file, without bound. Here it is in
// SQLite's temporary database, a file unlinked as soon as it is opened (in SQLITE_TMPDIR or
// TMPDIR, else /var/tmp or /tmp) with a page cache of CACHE_KIB: the memory is the same at any
// size of file; the disk is some tens of bytes a row (its keys) and the record of each plant the
// file names (some 500 bytes of JSON).

/** The scratch database's own page cache (the rest of it is read back through the system's). */
const CACHE_KIB = 16 * 1024
/** Parsed plants kept at hand: a row reads its plant two or three times while it is planned. */
const PLANTS_AT_HAND = 1000
/** Ids and names a page when they are handed to the catalogue, which looks them up by key. */
const PAGE = 1000

const SCHEMA = `
  CREATE TABLE file_ids (
    id INTEGER PRIMARY KEY,
    held INTEGER NOT NULL DEFAULT 0,    -- the catalogue had this id when the import began
    looked INTEGER NOT NULL DEFAULT 0,  -- looked up by key (Lookup), found or not
    trashed INTEGER NOT NULL DEFAULT 0  -- in the trash when the import began, or held then and gone when looked up
  );
  CREATE TABLE file_skus (key TEXT PRIMARY KEY) WITHOUT ROWID;
  -- pass: 1 for the rows without an id, 2 for those whose id no plant has (counted by a second walk)
  CREATE TABLE names (name TEXT PRIMARY KEY, pass INTEGER NOT NULL) WITHOUT ROWID;
  -- by_id: a plant of Known.byId; 0 for one known only as the holder of a SKU
  CREATE TABLE plants (id INTEGER PRIMARY KEY, plant TEXT NOT NULL, by_id INTEGER NOT NULL);
  -- holder NULL: a SKU looked up that no plant held
  CREATE TABLE skus (key TEXT PRIMARY KEY, holder INTEGER) WITHOUT ROWID;
  CREATE TABLE records (record TEXT PRIMARY KEY, held INTEGER NOT NULL, seen INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
  CREATE TABLE bases (id INTEGER PRIMARY KEY, base TEXT);
  CREATE TABLE named (id INTEGER PRIMARY KEY, line INTEGER NOT NULL);
  CREATE TABLE given (key TEXT PRIMARY KEY, line INTEGER NOT NULL, plant INTEGER) WITHOUT ROWID;
`

/** What a base is kept as: its fields, and who changed each since (a Map in memory). */
interface StoredBase { fields: Plant, changedBy: Array<[string, string]> }

/**
 * `fn`, its failures said as the working file's: the file is created only once the cache is full,
 * in whichever temporary folder SQLite finds writable, and a full disk there shows mid-import.
 */
function scratchWork<A extends unknown[], R> (fn: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    try {
      return fn(...args)
    } catch (err) {
      throw new CommandFailed(`the import keeps what it must remember of the file in a temporary file (in TMPDIR, else /var/tmp or /tmp), which failed: ${(err as Error).message}` +
        `${typeof (err as { code?: unknown }).code === 'string' ? ` (${(err as { code: string }).code})` : ''}; set TMPDIR to a folder with room`)
    }
  }
}

/** A statement run: its changes. */
const run = <P extends unknown[]>(db: Database.Database, sql: string): (...params: P) => number => {
  const statement = db.prepare<P>(sql)
  return scratchWork((...params: P) => statement.run(...params).changes)
}

/** A statement's first column of its first row, or undefined for none. */
const value = <P extends unknown[]>(db: Database.Database, sql: string): (...params: P) => unknown => {
  const statement = db.prepare<P>(sql).pluck()
  return scratchWork((...params: P) => statement.get(...params))
}

/** A keyset walk: `sql` takes the last key of the page before and the page's size. */
function * pages<K extends number | string> (db: Database.Database, sql: string, first: K): Generator<K[]> {
  const statement = db.prepare<[K, number], K>(sql).pluck()
  const page = scratchWork((after: K) => statement.all(after, PAGE))
  for (let rows = page(first); rows.length > 0; rows = page(rows[rows.length - 1])) yield rows
}

const open = scratchWork((): Database.Database => {
  const db = new Database('')
  // Nothing in it outlives the import: no journal, no syncs, and one transaction for its whole
  // life (a commit a statement cost ten times the statement).
  db.pragma('journal_mode = OFF')
  db.pragma('synchronous = OFF')
  db.pragma('locking_mode = EXCLUSIVE')
  db.pragma(`cache_size = -${CACHE_KIB}`)
  db.exec(SCHEMA)
  db.exec('BEGIN')
  return db
})

export class Scratch {
  readonly known: Known
  readonly soFar: SoFar
  private readonly db = open()
  /**
   * Plants of Known.byId at hand, parsed (a row reads its plant two or three times as it is planned),
   * and those of them newer than the table: a plant looked up and then changed by its row is written once.
   */
  private readonly atHand = new Map<number, Plant | undefined>()
  private readonly unwritten = new Set<number>()
  /** Whether any record is held: a first import into an empty catalogue then asks nothing per row. */
  private anyRecord = false
  /** Whether any id is refused as in the trash: most imports have none to ask about per row. */
  private anyTrashed = false

  // The file, read before anything is written.
  private readonly addId = run<[number]>(this.db, 'INSERT OR IGNORE INTO file_ids (id) VALUES (?)')
  private readonly addSku = run<[string]>(this.db, 'INSERT OR IGNORE INTO file_skus (key) VALUES (?)')
  private readonly addNameIn = run<[string, number]>(this.db, 'INSERT OR IGNORE INTO names (name, pass) VALUES (?, ?)')
  private readonly isId = value<[number]>(this.db, 'SELECT 1 FROM file_ids WHERE id = ?')
  private readonly isSku = value<[string]>(this.db, 'SELECT 1 FROM file_skus WHERE key = ?')
  private readonly isNameIn = value<[string, number]>(this.db, 'SELECT 1 FROM names WHERE name = ? AND pass = ?')
  private readonly isHeldId = value<[number]>(this.db, 'SELECT 1 FROM file_ids WHERE id = ? AND held = 1')
  private readonly countIds = value<[]>(this.db, 'SELECT count(*) FROM file_ids')
  private readonly countHeld = value<[]>(this.db, 'SELECT count(*) FROM file_ids WHERE held = 1')
  // The catalogue, read before anything is written, and looked up by key as the rows are planned (Lookup).
  private readonly setHeld = run<[number]>(this.db, 'UPDATE file_ids SET held = 1 WHERE id = ?')
  private readonly setTrashed = run<[number]>(this.db, 'UPDATE file_ids SET trashed = 1 WHERE id = ?')
  private readonly countRecord = run<[string]>(this.db, 'INSERT INTO records (record, held) VALUES (?, 1) ON CONFLICT (record) DO UPDATE SET held = held + 1')
  private readonly isMissing = value<[number]>(this.db, 'SELECT 1 FROM file_ids WHERE id = ? AND held = 0')
  private readonly countMissing = value<[]>(this.db, 'SELECT count(*) FROM file_ids WHERE held = 0')
  private readonly lookId = run<[number]>(this.db, 'INSERT INTO file_ids (id, looked) VALUES (?, 1) ON CONFLICT (id) DO UPDATE SET looked = 1 WHERE looked = 0')
  private readonly lookSku = run<[string]>(this.db, 'INSERT OR IGNORE INTO skus (key) VALUES (?)')
  // Known.byId and Known.bySku.
  private readonly plantById = value<[number]>(this.db, 'SELECT plant FROM plants WHERE id = ? AND by_id = 1')
  private readonly plantOf = value<[number]>(this.db, 'SELECT plant FROM plants WHERE id = ?')
  private readonly setById = run<[number, string]>(this.db, 'INSERT INTO plants (id, plant, by_id) VALUES (?, ?, 1) ON CONFLICT (id) DO UPDATE SET plant = excluded.plant, by_id = 1')
  private readonly addHolder = run<[number, string]>(this.db, 'INSERT OR IGNORE INTO plants (id, plant, by_id) VALUES (?, ?, 0)')

  constructor () {
    this.known = this.knownView()
    this.soFar = this.soFarView()
  }

  close (): void {
    this.db.close()
  }

  addFileId (id: number): void { this.addId(id) }
  addFileSku (key: string): void { this.addSku(key) }
  /** A name of a new plant the file may add, first seen in `pass`: whether it is new. */
  addName (name: string, pass: 1 | 2): boolean { return this.addNameIn(name, pass) > 0 }
  isFileId (id: number): boolean { return this.isId(id) !== undefined }
  isFileSku (key: string): boolean { return this.isSku(key) !== undefined }
  isName (name: string, pass: 1 | 2): boolean { return this.isNameIn(name, pass) !== undefined }
  /** Whether the catalogue had this id of the file when the import began. */
  isHeld (id: number): boolean { return this.isHeldId(id) !== undefined }
  /** Whether every id of the file names a plant the catalogue had. */
  allIdsHeld (): boolean { return this.countIds() === this.countHeld() }
  /** The file's ids, a page at a time. */
  idPages (): Generator<number[]> { return pages<number>(this.db, 'SELECT id FROM file_ids WHERE id > ? ORDER BY id LIMIT ?', 0) }
  /** The names of new plants the file may add, a page at a time. */
  namePages (): Generator<string[]> { return pages<string>(this.db, 'SELECT name FROM names WHERE name > ? ORDER BY name LIMIT ?', '') }

  /** An id of the file the catalogue had when the import began. */
  held (id: number): void { this.setHeld(id) }
  /** An id of the file whose rows are refused as naming a plant in the trash (Known.trashed). */
  trashed (id: number): void {
    this.setTrashed(id)
    this.anyTrashed = true
  }

  /** A plant of the catalogue, when the import began, with a record the file's new plants may have. */
  holds (record: string): void {
    this.countRecord(record)
    this.anyRecord = true
  }

  /** The file's ids the catalogue did not have when the import began (those of plants in the trash among them). */
  missing (): IdSet {
    const db = this.db
    return {
      size: Number(this.countMissing()),
      has: (id) => this.isMissing(id) !== undefined,
      * [Symbol.iterator] () {
        for (const page of pages<number>(db, 'SELECT id FROM file_ids WHERE held = 0 AND id > ? ORDER BY id LIMIT ?', 0)) yield * page
      }
    }
  }

  /** Whether `id` is yet to be looked up (it is looked up now). */
  lookUpId (id: number): boolean { return this.lookId(id) > 0 }
  /** Whether `key` is yet to be looked up (or held by a plant already known): it is looked up now. */
  lookUpSku (key: string): boolean { return this.lookSku(key) > 0 }

  /**
   * The plants found by these ids: each known by its id unless a row has already changed it. An id
   * the catalogue had when the import began and no longer has names a plant deleted meanwhile (in
   * the trash), refused in the same words.
   */
  lookedUp (ids: Iterable<number>, plants: Plant[]): void {
    const found = new Set<number>()
    for (const plant of plants) {
      found.add(plant.id)
      if (!this.known.byId.has(plant.id)) this.known.byId.set(plant.id, plant)
    }
    for (const id of ids) if (!found.has(id) && this.isHeld(id)) this.trashed(id)
  }

  private knownView (): Known {
    const db = this.db
    const holder = value<[string]>(db, 'SELECT holder FROM skus WHERE key = ?')
    const setHolder = run<[string, number]>(db, 'INSERT INTO skus (key, holder) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET holder = excluded.holder')
    const held = value<[string]>(db, 'SELECT held FROM records WHERE record = ?')
    const trashed = value<[number]>(db, 'SELECT 1 FROM file_ids WHERE id = ? AND trashed = 1')
    const base = value<[number]>(db, 'SELECT base FROM bases WHERE id = ?')
    const hasBase = value<[number]>(db, 'SELECT 1 FROM bases WHERE id = ?')
    const setBase = run<[number, string | null]>(db, 'INSERT OR REPLACE INTO bases (id, base) VALUES (?, ?)')
    return {
      byId: {
        get: (id) => this.plant(id),
        has: (id) => this.plant(id) !== undefined,
        set: (id, plant) => {
          this.keep(id, plant)
          this.unwritten.add(id)
        }
      },
      // Its holder as byId has it, once a row has named it: only a row naming the plant again
      // (refused) or asking what it holds now (takenBy) reads it then.
      bySku: {
        get: (key) => {
          const id = holder(key) as number | null | undefined
          if (id === undefined || id === null) return undefined
          return this.plant(id) ?? JSON.parse(this.plantOf(id) as string) as Plant
        },
        has: (key) => holder(key) != null,
        set: (key, plant) => {
          setHolder(key, plant.id)
          if (this.plant(plant.id) === undefined) this.addHolder(plant.id, JSON.stringify(plant))
        }
      },
      records: { get: (record) => this.anyRecord ? held(record) as number | undefined : undefined },
      trashed: { has: (id) => this.anyTrashed && trashed(id) !== undefined },
      bases: {
        get: (id) => {
          const text = base(id) as string | null | undefined
          if (text === undefined || text === null) return text
          const { fields, changedBy } = JSON.parse(text) as StoredBase
          return { fields, changedBy: new Map(changedBy) }
        },
        has: (id) => hasBase(id) !== undefined,
        set: (id, base) => { setBase(id, base === null ? null : JSON.stringify({ fields: base.fields, changedBy: [...base.changedBy] } satisfies StoredBase)) }
      }
    }
  }

  private soFarView (): SoFar {
    const db = this.db
    const seen = value<[string]>(db, 'SELECT seen FROM records WHERE record = ?')
    const setSeen = run<[string, number]>(db, 'INSERT INTO records (record, held, seen) VALUES (?, 0, ?) ON CONFLICT (record) DO UPDATE SET seen = excluded.seen')
    const named = value<[number]>(db, 'SELECT line FROM named WHERE id = ?')
    const claim = run<[number, number]>(db, 'INSERT OR IGNORE INTO named (id, line) VALUES (?, ?)')
    const given = db.prepare<[string], { line: number, plant: number | null }>('SELECT line, plant FROM given WHERE key = ?')
    const setGiven = run<[string, number, number | null]>(db, 'INSERT OR REPLACE INTO given (key, line, plant) VALUES (?, ?, ?)')
    return {
      seen: { get: (record) => seen(record) as number | undefined, set: (record, n) => { setSeen(record, n) } },
      named: { claim: (id, line) => claim(id, line) > 0 ? undefined : named(id) as number },
      given: {
        get: (key): Given | undefined => {
          const row = given.get(key)
          return row === undefined ? undefined : { line: row.line, plant: row.plant ?? undefined }
        },
        set: (key, { line, plant }) => { setGiven(key, line, plant ?? null) }
      }
    }
  }

  /** A plant of byId (undefined for none), parsed once while it is at hand. */
  private plant (id: number): Plant | undefined {
    if (this.atHand.has(id)) return this.atHand.get(id)
    const text = this.plantById(id) as string | undefined
    const plant = text === undefined ? undefined : JSON.parse(text) as Plant
    this.keep(id, plant)
    return plant
  }

  private keep (id: number, plant: Plant | undefined): void {
    if (this.atHand.size >= PLANTS_AT_HAND && !this.atHand.has(id)) {
      for (const unwritten of this.unwritten) this.setById(unwritten, JSON.stringify(this.atHand.get(unwritten)))
      this.unwritten.clear()
      this.atHand.clear()
    }
    this.atHand.set(id, plant)
  }
}
