import { existsSync, readFileSync } from 'node:fs'
import { parseMarks, type RestoreMarks } from '../store/restore-marks.js'
import { admin, adminFailure, openCatalogueAdmin } from './admin.js'
import { locate } from './target.js'
import { toldReceivers } from './restore-marks.js'
import { stockCarried } from './backup.js'
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
  const folder = await openCatalogueAdmin(where)
  if (values.marks !== undefined && await folder.hasCatalogue()) {
    // The catalogue itself knows what it handed out up to now; a marks file, saved from it earlier,
    // knows less, and its numbers would hand out again what was given since.
    throw new CommandFailed(`${where.dataDir} still holds its catalogue, which knows what it handed out better than ${values.marks}: run restore without --marks. ` +
      '--marks is for a catalogue that is lost (one that cannot be read: move it aside first); nothing was restored')
  }
  const check = await admin(async () => folder.checkBackup(backup))
  if (!await folder.hasCatalogue() && values.marks === undefined) {
    throw new CommandFailed(`no catalogue in ${where.dataDir} to read what it handed out: if it is lost, pass --marks FILE saved from it (plants restore-marks save; with none saved, docs/backup-restore.md: "When the catalogue is lost")`)
  }
  let marks: RestoreMarks | undefined
  if (values.marks !== undefined) {
    try {
      marks = parseMarks(JSON.parse(readFileSync(values.marks, 'utf8')))
    } catch (err) {
      throw new CommandFailed(`--marks ${values.marks}: ${(err as Error).message}`)
    }
  }
  try {
    const { outcome, replaced } = await folder.restore(backup, { marks, progress: (message) => io.stderr.write(`${message}\n`) })
    io.stdout.write(`restored ${backup} into ${where.dataDir} in ${formatDuration(Date.now() - started)}: ${plural(check.plants, 'plant')}, ` +
      `${plural(check.photoFiles, 'photo file')}, ${stockCarried(check)}; new ids start after ${outcome.lastId}, feed positions up to ${outcome.feedFloor - 1} are gone (410) and ` +
      `the feed follows from ${outcome.feedFloor}, versions moved up by ${outcome.versionShift} (ETags from before are 412), ${plural(outcome.keys, 'API key')} kept; ${toldReceivers(outcome.told)}` +
      `${replaced ? `; the replaced catalogue is ${replaced}` : ''}\n`)
    return 0
  } catch (err) {
    const failure = adminFailure(err)
    if (failure instanceof CommandFailed) throw failure
    throw new CommandFailed(`restore failed: ${(err as Error).message}`)
  }
}
