import { existsSync, statSync } from 'node:fs'
import type { BackupCheck } from '../store/admin-store.js'
import { admin, adminFailure, openCatalogueAdmin } from './admin.js'
import { locate } from './target.js'
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
  const folder = await openCatalogueAdmin(where)
  await admin(async () => folder.requireCatalogue())
  checkOutputFolder(target, 'backup')
  if (existsSync(target) && !values.force) throw new CommandFailed(`${target} exists (pass --force to replace it)`)
  const started = Date.now()
  try {
    const check = await folder.backup(target)
    io.stdout.write(`backed up the data folder ${dataDir} to ${target} in ${formatDuration(Date.now() - started)}: ` +
      `${plural(check.plants, 'plant')}${check.plants > 0 ? ` (ids up to ${check.maxId})` : ''}, ${plural(check.photoFiles, 'photo file')}, ${stockCarried(check)}, ` +
      `${(statSync(target).size / 1048576).toFixed(1)} MB, integrity ok\n`)
    return 0
  } catch (err) {
    const failure = adminFailure(err)
    if (failure instanceof CommandFailed) throw failure
    if ((err as NodeJS.ErrnoException).code?.startsWith('E') === true) throw cannotWrite(target, err)
    throw new CommandFailed(`backup failed: ${(err as Error).message}`)
  }
}

/** What a backup holds of the stock, for the summaries of backup and restore. */
export const stockCarried = ({ stock }: BackupCheck): string =>
  `stock: ${plural(stock.locations, 'location')}, ${plural(stock.levels, 'level')}, ${plural(stock.movements, 'movement')} in the ledger`
