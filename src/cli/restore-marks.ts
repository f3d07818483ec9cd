import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { parseMarks, type RestoreMarks } from '../store/restore-marks.js'
import { admin, openCatalogueAdmin } from './admin.js'
import { locate } from './target.js'
import { CommandFailed, plural, UsageError, type Command, type Io } from './command.js'
import { cannotWrite, checkOutputFolder } from './output-file.js'

export const restoreMarksCommand: Command = {
  name: 'restore-marks',
  usage: `Usage: plants restore-marks save FILE | apply FILE [options]

What a catalogue has handed out (its highest id, feed position and version, its ledger position
and its API keys), so that a restore from a backup moves past it and reuses none of it, and what
its webhook receivers may hold (every plant's version), so that they are sent what the restore changed
(docs/backup-restore.md).

  save FILE    writes the marks of the catalogue about to be replaced to FILE (mode 0600: it holds
               the API keys' hashes). Stop every instance first, so nothing is handed out after.
  apply FILE   moves the restored catalogue (PostgreSQL, after pg_restore) past the marks in FILE:
               new ids after the highest, every older feed position 410, every version moved up
               (ETags from before are 412), the saved API keys, and a change after the floor for
               each plant webhook receivers hold otherwise. Before any instance starts.

On PostgreSQL (DATABASE_URL, or --database-url):
  plants restore-marks save marks.json; pg_restore …; plants restore-marks apply marks.json
With a data folder, plants restore does all of it (save is for a folder whose catalogue may be lost).

Options:
  --data-dir DIR        the service's data folder (save only)
  --database-url URL    the PostgreSQL database (default: $DATABASE_URL)
  --force               save: replace FILE if it exists
  -h, --help            this help`,
  options: {
    'data-dir': { type: 'string' },
    'database-url': { type: 'string' },
    force: { type: 'boolean' },
    // Accepted to be refused with a way forward: --url names a running service in other commands.
    url: { type: 'string' }
  },
  run: runRestoreMarks
}

async function runRestoreMarks (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  const [action, file, ...rest] = positionals
  if (values.url !== undefined) {
    throw new UsageError('restore-marks reads and writes the catalogue\'s own database (--data-dir, or --database-url / DATABASE_URL), not a running service (--url)')
  }
  if ((action !== 'save' && action !== 'apply') || file === undefined || rest.length > 0) throw new UsageError('say save FILE or apply FILE')
  if (values['database-url'] !== undefined && values['data-dir'] !== undefined) throw new UsageError('give either --database-url or --data-dir, not both')
  const where = values['database-url'] !== undefined
    ? { kind: 'postgres' as const, databaseUrl: values['database-url'] as string }
    : await locate({ 'data-dir': values['data-dir'] }, io)
  if (action === 'save') {
    checkOutputFolder(file, 'restore-marks save')
    if (existsSync(file) && !values.force) throw new CommandFailed(`${file} exists (pass --force to replace it)`)
    if (where.kind === 'service') throw new Error('restore-marks takes no --url')
    const catalogue = await openCatalogueAdmin(where)
    const marks = await admin(async () => catalogue.readMarks())
    // A timer's save beside the running service is as documented (for a catalogue lost with its
    // disk); before a restore it is a mistake: what the service hands out next is missed.
    const running = await admin(async () => catalogue.kind === 'postgres' ? await catalogue.serviceConnections() : 0)
    if (running > 0) {
      io.stderr.write(`warning: the service is connected to this database (${plural(running, 'connection')}): what it hands out after this is not in ${file}. ` +
        'Before a restore, stop every instance and save again\n')
    }
    const partial = `${file}.partial-${process.pid}`
    try {
      writeFileSync(partial, `${JSON.stringify(marks, null, 2)}\n`, { mode: 0o600 })
      renameSync(partial, file)
    } catch (err) {
      rmSync(partial, { force: true })
      throw cannotWrite(file, err)
    }
    io.stdout.write(`saved the marks to ${file}: ids up to ${marks.lastId}, feed positions up to ${marks.feedHead}, versions up to ${marks.versionHigh}, ${marks.keys.length} API keys, ` +
      `the versions of ${plural(marks.told?.plants.length ?? 0, 'plant')} (what webhook receivers hold)\n`)
    return 0
  }
  if (where.kind !== 'postgres') throw new CommandFailed('apply is for PostgreSQL (DATABASE_URL or --database-url): a data folder is restored with plants restore FILE')
  let marks: RestoreMarks
  try {
    marks = parseMarks(JSON.parse(readFileSync(file, 'utf8')))
  } catch (err) {
    throw new CommandFailed(`${file}: ${(err as Error).message}`)
  }
  const catalogue = await openCatalogueAdmin(where)
  const outcome = await admin(async () => catalogue.applyMarks(marks, (message) => io.stderr.write(`${message}\n`)))
  io.stdout.write(`applied ${file} to ${catalogue.address}: ${outcome.plants} plants; new ids start after ${outcome.lastId}, ` +
    `feed positions up to ${outcome.feedFloor - 1} are gone (410) and the feed follows from ${outcome.feedFloor}, ` +
    `versions moved up by ${outcome.versionShift} (ETags from before are 412), ${outcome.keys} API keys; ${toldReceivers(outcome.told)}\n`)
  return 0
}

/** What a restore's output says of webhook receivers (RestoreOutcome.told). */
export function toldReceivers (told: number | null): string {
  if (told === null) return 'webhook receivers are not told what the restore undid: the marks were saved without the plants\' versions (docs/backup-restore.md)'
  return `webhook receivers are sent ${plural(told, 'change')} after the floor: each plant the restore changed, as it is now`
}
