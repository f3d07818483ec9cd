import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { DANGLING_PHOTO_FILES } from '../store/sqlite/photo-writes.js'
import { databaseFile, locate } from './catalogue.js'
import { CommandFailed, formatDuration, plural, UsageError, type Command, type Io } from './command.js'
import { cannotWrite, checkOutputFolder } from './output-file.js'

export const backupCommand: Command = {
  name: 'backup',
  usage: `Usage: plants backup FILE [options]

Copies the data folder's catalogue.db to FILE while the service keeps serving; the photos are in
it (their files are rows of the same database), so the backup and a restore carry them. The copy is one
snapshot (VACUUM INTO inside a single read transaction): it holds every write acknowledged before
the backup began, and writers are not blocked while it is made. The copy is checked with
PRAGMA integrity_check, flushed to disk, and only then given its name, so FILE is either a whole,
checked backup or absent.

To restore: stop the service, run plants restore FILE (a file copied back by hand would hand out
again the ids, ETags and feed positions given since the backup), start the service.

Options:
  --data-dir DIR   the service's data folder (default: $DATA_DIR, else ./data); with DATABASE_URL
                   set and no --data-dir, the catalogue is in PostgreSQL: use pg_dump
  --force          replace FILE if it exists
  -h, --help       this help

A service on PostgreSQL is backed up with pg_dump; there is no backup over --url.`,
  options: {
    'data-dir': { type: 'string' },
    url: { type: 'string' },
    force: { type: 'boolean' }
  },
  run: runBackup
}

async function runBackup (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  if (values.url !== undefined) throw new UsageError('backup reads the data folder directly: run it where the service keeps its DATA_DIR')
  if (positionals.length !== 1) throw new UsageError('backup takes one FILE')
  const target = positionals[0]
  const where = await locate(values, io)
  if (where.kind === 'postgres') {
    throw new CommandFailed('the catalogue is in PostgreSQL (DATABASE_URL is set): back it up with pg_dump; plants backup copies a data folder (--data-dir)')
  }
  if (where.kind !== 'folder') throw new Error('backup takes no --url')
  const { dataDir } = where
  const source = databaseFile(dataDir)
  if (!existsSync(source)) throw new CommandFailed(`no catalogue in ${dataDir} (${source} does not exist)`)
  checkOutputFolder(target, 'backup')
  if (existsSync(target) && !values.force) throw new CommandFailed(`${target} exists (pass --force to replace it)`)
  const partial = `${target}.partial-${process.pid}`
  rmSync(partial, { force: true })
  const started = Date.now()
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
    if (check.userVersion !== version) throw new CommandFailed(`the copy has schema version ${check.userVersion}, the catalogue ${version}`)
    flush(partial)
    renameSync(partial, target)
    flush(dirname(target))
    io.stdout.write(`backed up the data folder ${dataDir} to ${target} in ${formatDuration(Date.now() - started)}: ` +
      `${plural(check.plants, 'plant')}${check.plants > 0 ? ` (ids up to ${check.maxId})` : ''}, ${plural(check.photoFiles, 'photo file')}, ` +
      `${(statSync(target).size / 1048576).toFixed(1)} MB, integrity ok\n`)
    return 0
  } catch (err) {
    rmSync(partial, { force: true })
    if (err instanceof CommandFailed) throw err
    if ((err as NodeJS.ErrnoException).code?.startsWith('E') === true) throw cannotWrite(target, err)
    // The temporary copy is named as the file asked for: the person never named the .partial.
    throw new CommandFailed(`backup failed: ${(err as Error).message.replaceAll(partial, target)}`)
  }
}

export interface BackupCheck { plants: number, maxId: number, userVersion: number, photoFiles: number }

/** Opens a backup read-only and proves it whole: integrity_check must answer a single "ok". */
export function verifyBackup (file: string): BackupCheck {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    const problems = db.pragma('integrity_check') as Array<{ integrity_check: string }>
    if (problems.length !== 1 || problems[0].integrity_check !== 'ok') {
      throw new CommandFailed(`the copy fails PRAGMA integrity_check: ${problems.slice(0, 5).map((p) => p.integrity_check).join('; ')}`)
    }
    const { plants, maxId } = db.prepare('SELECT count(*) AS plants, coalesce(max(id), 0) AS maxId FROM plants').get() as { plants: number, maxId: number }
    // Photos ride in the same file (BLOB rows); every photo a plant names must have its files.
    const hasPhotos = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'photo_files'").get() !== undefined
    const photoFiles = hasPhotos ? db.prepare('SELECT count(*) FROM photo_files').pluck().get() as number : 0
    const dangling = hasPhotos ? db.prepare(DANGLING_PHOTO_FILES).pluck().get() as number : 0
    if (dangling > 0) throw new CommandFailed(`the copy names ${plural(dangling, 'photo file')} it does not hold`)
    return { plants, maxId, userVersion: db.pragma('user_version', { simple: true }) as number, photoFiles }
  } finally {
    db.close()
  }
}

function flush (path: string): void {
  const fd = openSync(path, 'r')
  try { fsyncSync(fd) } finally { closeSync(fd) }
}
