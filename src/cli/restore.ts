import { closeSync, copyFileSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, readSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { RestoreMarks } from '../store/restore-marks.js'
import { parseMarks } from '../store/restore-marks.js'
import { migrate } from '../store/sqlite/migrations.js'
import { applyMarks, readMarks } from '../store/sqlite/restore-marks.js'
import { connect } from '../store/sqlite/writes.js'
import { verifyBackup, type BackupCheck } from './backup.js'
import { databaseFile, locate } from './catalogue.js'
import { toldReceivers } from './restore-marks.js'
import { CommandFailed, formatDuration, plural, UsageError, type Command, type Io } from './command.js'

export const restoreCommand: Command = {
  name: 'restore',
  usage: `Usage: plants restore FILE [options]

Replaces the data folder's catalogue with the backup FILE (from plants backup), so that nothing the
catalogue handed out since the backup names something else: ids continue after the highest the
replaced catalogue gave, every feed position it gave is 410 (clients reload and follow from the
new head), every plant's version moves past the highest it gave (an ETag held from before is 412),
and the API keys are those of the replaced catalogue (a key revoked since the backup stays revoked).
Webhook receivers are sent, after the floor, a change for each plant whose restored state differs
from what they were sent (created, updated or deleted), so each holds the restored catalogue.
The replaced catalogue is kept beside it as catalogue.db.replaced-TIME.

Stop the service first: restore refuses while another process has the catalogue open.

Options:
  --data-dir DIR   the service's data folder (default: $DATA_DIR, else ./data)
  --marks FILE     when the catalogue to replace is lost: the marks saved from it (plants
                   restore-marks save), read instead of the catalogue. With none saved, make one
                   from the backup and raise its numbers (docs/backup-restore.md: "When the catalogue is lost")
  -h, --help       this help

On PostgreSQL, restore with pg_restore and carry the marks with plants restore-marks (docs/backup-restore.md).`,
  options: {
    'data-dir': { type: 'string' },
    marks: { type: 'string' },
    // Accepted to be refused with a way forward: --url names a running service in other commands.
    url: { type: 'string' }
  },
  run: runRestore
}

async function runRestore (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  if (values.url !== undefined) {
    throw new UsageError('restore replaces the catalogue file in the data folder (--data-dir), with the service stopped, not through a running service (--url): run it on the service\'s host')
  }
  if (positionals.length !== 1) throw new UsageError('restore takes one FILE')
  const backup = positionals[0]
  const where = await locate(values, io)
  if (where.kind === 'postgres') {
    throw new CommandFailed('the catalogue is in PostgreSQL (DATABASE_URL is set): restore it with pg_restore between plants restore-marks save and apply (docs/backup-restore.md: "Restoring from a backup")')
  }
  if (where.kind !== 'folder') throw new Error('restore takes no --url')
  if (!existsSync(backup)) throw new CommandFailed(`${backup} does not exist`)
  const started = Date.now()
  const target = databaseFile(where.dataDir)
  const partial = `${target}.restoring-${process.pid}`
  const check = checkBackup(backup, target)

  // The catalogue being replaced, locked for the whole restore: no service may open it meanwhile.
  let current: Database.Database | undefined
  let marks: RestoreMarks
  if (existsSync(target) && values.marks !== undefined) {
    // The catalogue itself knows what it handed out up to now; a marks file, saved from it earlier,
    // knows less, and its numbers would hand out again what was given since.
    throw new CommandFailed(`${where.dataDir} still holds its catalogue, which knows what it handed out better than ${values.marks}: run restore without --marks. ` +
      '--marks is for a catalogue that is lost (one that cannot be read: move it aside first); nothing was restored')
  }
  if (existsSync(target)) {
    current = lockExclusively(target)
  } else if (values.marks === undefined) {
    throw new CommandFailed(`no catalogue in ${where.dataDir} to read what it handed out: if it is lost, pass --marks FILE saved from it (plants restore-marks save; with none saved, docs/backup-restore.md: "When the catalogue is lost")`)
  }
  try {
    if (values.marks !== undefined) {
      try {
        marks = parseMarks(JSON.parse(readFileSync(values.marks, 'utf8')))
      } catch (err) {
        throw new CommandFailed(`--marks ${values.marks}: ${(err as Error).message}`)
      }
    } else {
      marks = readMarks(current!)
    }
    rmSync(partial, { force: true })
    copyFileSync(backup, partial)
    const copy = connect(partial)
    let outcome
    try {
      migrate(copy, (message) => io.stderr.write(`${message}\n`))
      outcome = applyMarks(copy, marks)
      copy.pragma('wal_checkpoint(TRUNCATE)')
    } finally {
      copy.close() // the last connection: its WAL is folded into the file and removed
    }
    if (existsSync(`${partial}-wal`)) throw new CommandFailed('the restored copy kept a write-ahead log: another process opened it')
    flush(partial)

    let replaced: string | undefined
    if (current) {
      current.pragma('wal_checkpoint(TRUNCATE)')
      current.close()
      current = undefined
      if (existsSync(`${target}-wal`)) {
        throw new CommandFailed(`${target}-wal remains after closing: another process has the catalogue open; stop it and run restore again`)
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
    io.stdout.write(`restored ${backup} into ${where.dataDir} in ${formatDuration(Date.now() - started)}: ${plural(check.plants, 'plant')}, ` +
      `${plural(check.photoFiles, 'photo file')}; new ids start after ${outcome.lastId}, feed positions up to ${outcome.feedFloor - 1} are gone (410) and ` +
      `the feed follows from ${outcome.feedFloor}, versions moved up by ${outcome.versionShift} (ETags from before are 412), ${plural(outcome.keys, 'API key')} kept; ${toldReceivers(outcome.told)}` +
      `${replaced ? `; the replaced catalogue is ${replaced}` : ''}\n`)
    return 0
  } catch (err) {
    rmSync(partial, { force: true })
    rmSync(`${partial}-wal`, { force: true })
    rmSync(`${partial}-shm`, { force: true })
    if (err instanceof CommandFailed) throw err
    throw new CommandFailed(`restore failed: ${(err as Error).message}`)
  } finally {
    current?.close()
  }
}

/**
 * Proves FILE a whole catalogue backup before anything is touched, or refuses in one line that names
 * it and says what is wrong in an operator's words (SQLite's own errors say "file is not a
 * database" or "disk I/O error" for a folder, with a stack that helps nobody at 3 a.m.).
 */
function checkBackup (file: string, target: string): BackupCheck {
  const refuse = (what: string): CommandFailed => new CommandFailed(`${file} ${what}; nothing was restored and the catalogue is unchanged`)
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
    if (code.startsWith('SQLITE_CORRUPT') || (err instanceof CommandFailed && message.includes('integrity_check'))) {
      throw refuse('is damaged: it fails the integrity check (a copy cut short, or a disk error); use another backup')
    }
    if (err instanceof CommandFailed) throw refuse(`is damaged: ${message.replace(/^the copy /, 'it ')}; use another backup`)
    if (/^no such (table|column)/.test(message)) throw refuse('is not a catalogue backup (a database without the catalogue\'s tables)')
    if (code.startsWith('SQLITE_')) throw refuse(`cannot be read as a backup (${message})`)
    throw err
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
    if (/^SQLITE_(BUSY|LOCKED)/.test(code)) throw new CommandFailed(`${file} is in use by another process: stop the service first`)
    throw new CommandFailed(`cannot open ${file}: ${(err as Error).message}`)
  }
}

function firstBytes (file: string, n: number): string {
  const fd = openSync(file, 'r')
  try {
    const bytes = Buffer.alloc(n)
    return bytes.subarray(0, readSync(fd, bytes, 0, n, 0)).toString('latin1')
  } finally { closeSync(fd) }
}

function flush (path: string): void {
  const fd = openSync(path, 'r')
  try { fsyncSync(fd) } finally { closeSync(fd) }
}
