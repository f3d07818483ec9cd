import { closeSync, copyFileSync, existsSync, fsyncSync, linkSync, openSync, readSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { AdminRefused, type BackupCheck, type RestoreResult } from '../admin-store.js'
import type { RestoreMarks } from '../restore-marks.js'
import { migrate } from './migrations.js'
import { DANGLING_PHOTO_FILES } from './photo-writes.js'
import { applyMarks, readMarks } from './restore-marks.js'
import { hasTable } from './snapshot.js'
import { mainOnRow } from './stock-migration.js'
import { connect } from './writes.js'

// Backups of a data folder's catalogue and restores from them (plants backup, plants restore).

function flush (path: string): void {
  const fd = openSync(path, 'r')
  try { fsyncSync(fd) } finally { closeSync(fd) }
}

/**
 * One snapshot (VACUUM INTO inside a single read transaction) of `source` to `target`, while writers
 * go on: checked with PRAGMA integrity_check, flushed to disk, and only then given its name, so
 * `target` is either a whole, checked backup or absent. A failure names `target`, never the temporary copy.
 */
export function backupTo (source: string, target: string): BackupCheck {
  const partial = `${target}.partial-${process.pid}`
  rmSync(partial, { force: true })
  try {
    const db = new Database(source, { readonly: true, fileMustExist: true })
    let version: number
    try {
      db.pragma('busy_timeout = 10000')
      version = db.pragma('user_version', { simple: true }) as number
      db.prepare('VACUUM INTO ?').run(partial)
    } finally {
      db.close()
    }
    const check = verifyBackup(partial)
    if (check.userVersion !== version) throw new AdminRefused(`the copy has schema version ${check.userVersion}, the catalogue ${version}`)
    flush(partial)
    renameSync(partial, target)
    flush(dirname(target))
    return check
  } catch (err) {
    rmSync(partial, { force: true })
    if (err instanceof Error && !(err instanceof AdminRefused)) err.message = err.message.replaceAll(partial, target)
    throw err
  }
}

/** Opens a backup read-only and proves it whole: integrity_check must answer a single "ok". */
export function verifyBackup (file: string): BackupCheck {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    const problems = db.pragma('integrity_check') as Array<{ integrity_check: string }>
    if (problems.length !== 1 || problems[0].integrity_check !== 'ok') {
      throw new AdminRefused(`the copy fails PRAGMA integrity_check: ${problems.slice(0, 5).map((p) => p.integrity_check).join('; ')}`)
    }
    const { plants, maxId } = db.prepare('SELECT count(*) AS plants, coalesce(max(id), 0) AS maxId FROM plants').get() as { plants: number, maxId: number }
    // Photos ride in the same file (BLOB rows); every photo a plant names must have its files.
    const hasPhotos = hasTable(db, 'photo_files')
    const photoFiles = hasPhotos ? db.prepare('SELECT count(*) FROM photo_files').pluck().get() as number : 0
    const dangling = hasPhotos ? db.prepare(DANGLING_PHOTO_FILES).pluck().get() as number : 0
    if (dangling > 0) throw new AdminRefused(`the copy names ${dangling.toLocaleString('en')} photo file${dangling === 1 ? '' : 's'} it does not hold`)
    // The stock rides in it too (none in a backup from before stock): counted for the summary.
    const rows = (table: string): number => hasTable(db, table) ? db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number : 0
    // Main's levels of live plants are on their rows (migration 33; a backup from before has them in stock_levels).
    const mainLevels = mainOnRow(db) ? db.prepare('SELECT count(*) FROM plants WHERE main_on_hand IS NOT NULL').pluck().get() as number : 0
    const stock = { locations: rows('locations'), levels: rows('stock_levels') + mainLevels, movements: rows('stock_movements') }
    return { plants, maxId, userVersion: db.pragma('user_version', { simple: true }) as number, photoFiles, stock }
  } finally {
    db.close()
  }
}

/**
 * Proves FILE a whole catalogue backup before anything is touched, or refuses in one line that names
 * it and says what is wrong in an operator's words (SQLite's own errors say "file is not a
 * database" or "disk I/O error" for a folder, with a stack that helps nobody at 3 a.m.).
 */
export function checkBackup (file: string, target: string): BackupCheck {
  const refuse = (what: string): AdminRefused => new AdminRefused(`${file} ${what}; nothing was restored and the catalogue is unchanged`)
  const stats = statSync(file)
  if (stats.isDirectory()) throw refuse('is a folder, not a file: name the file plants backup wrote')
  if (stats.size === 0) throw refuse('is empty: not a catalogue backup')
  // Restored onto itself, the catalogue would only be moved past its own marks: every client's ids, ETags and positions refused for nothing.
  if (existsSync(target) && realpathSync(file) === realpathSync(target)) throw refuse('is the catalogue itself, not a backup: name the file plants backup wrote')
  if (firstBytes(file, 5) === 'PGDMP') {
    throw refuse('is a PostgreSQL dump (pg_dump), not a catalogue backup: restore it with pg_restore into the database (docs/backup-restore.md)')
  }
  try {
    return verifyBackup(file)
  } catch (err) {
    const code = (err as { code?: string }).code ?? ''
    const message = (err as Error).message
    if (code === 'SQLITE_NOTADB') throw refuse('is not a catalogue backup (not a database file: plants backup writes one)')
    if (code.startsWith('SQLITE_CORRUPT') || (err instanceof AdminRefused && message.includes('integrity_check'))) {
      throw refuse('is damaged: it fails the integrity check (a copy cut short, or a disk error); use another backup')
    }
    if (err instanceof AdminRefused) throw refuse(`is damaged: ${message.replace(/^the copy /, 'it ')}; use another backup`)
    if (/^no such (table|column)/.test(message)) throw refuse('is not a catalogue backup (a database without the catalogue\'s tables)')
    if (code.startsWith('SQLITE_')) throw refuse(`cannot be read as a backup (${message})`)
    throw err
  }
}

/**
 * Replaces the catalogue `target` with `backup` (checked already), moved past `marks` or else past what
 * `target` handed out. `target`, when it exists, is locked for the whole restore: no service may open it meanwhile.
 */
export function restoreFrom (target: string, backup: string, marks: RestoreMarks | undefined, progress: (message: string) => void): RestoreResult {
  const partial = `${target}.restoring-${process.pid}`
  let current = existsSync(target) ? lockExclusively(target) : undefined
  try {
    const past = marks ?? readMarks(current!)
    rmSync(partial, { force: true })
    copyFileSync(backup, partial)
    const copy = connect(partial)
    let outcome
    try {
      migrate(copy, progress)
      outcome = applyMarks(copy, past)
      copy.pragma('wal_checkpoint(TRUNCATE)')
    } finally {
      copy.close() // the last connection: its WAL is folded into the file and removed
    }
    if (existsSync(`${partial}-wal`)) throw new AdminRefused('the restored copy kept a write-ahead log: another process opened it')
    flush(partial)

    let replaced: string | undefined
    if (current) {
      current.pragma('wal_checkpoint(TRUNCATE)')
      current.close()
      current = undefined
      if (existsSync(`${target}-wal`)) {
        throw new AdminRefused(`${target}-wal remains after closing: another process has the catalogue open; stop it and run restore again`)
      }
      // A -shm left by an earlier process is stale: plants backup opens the catalogue read-only and
      // cannot remove it, nor can a process that crashed. The exclusive lock held until now proves
      // nobody had the catalogue open (in that mode SQLite keeps the index in memory and never
      // touches the file), and SQLite rebuilds the index on the next open.
      rmSync(`${target}-shm`, { force: true })
      // A second name for the replaced catalogue first, then the restored copy takes the name in one
      // rename: a crash at any point leaves catalogue.db whole, old or new, never absent.
      replaced = `${target}.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`
      linkSync(target, replaced)
    }
    renameSync(partial, target)
    flush(dirname(target))
    return { outcome, replaced }
  } catch (err) {
    rmSync(partial, { force: true })
    rmSync(`${partial}-wal`, { force: true })
    rmSync(`${partial}-shm`, { force: true })
    throw err
  } finally {
    current?.close()
  }
}

/**
 * Opens the catalogue with an exclusive lock that lasts until closed (EXCLUSIVE locking mode): while
 * the service or any other process has it open, the lock is refused, and once held, nobody else can
 * open it until the restore is done.
 */
function lockExclusively (file: string): Database.Database {
  const db = new Database(file, { fileMustExist: true })
  try {
    db.pragma('busy_timeout = 1000')
    db.pragma('locking_mode = EXCLUSIVE')
    db.exec('BEGIN EXCLUSIVE; COMMIT')
    return db
  } catch (err) {
    db.close()
    const code = (err as { code?: string }).code ?? ''
    if (/^SQLITE_(BUSY|LOCKED)/.test(code)) throw new AdminRefused(`${file} is in use by another process: stop the service first`)
    throw new AdminRefused(`cannot open ${file}: ${(err as Error).message}`)
  }
}

function firstBytes (file: string, n: number): string {
  const fd = openSync(file, 'r')
  try {
    const bytes = Buffer.alloc(n)
    return bytes.subarray(0, readSync(fd, bytes, 0, n, 0)).toString('latin1')
  } finally { closeSync(fd) }
}
