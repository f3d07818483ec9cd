import type { CatalogueSnapshot, PostgresAdmin } from '../store/admin-store.js'
import { admin, adminFailure, openCatalogueAdmin } from './admin.js'
import { dataDirOf, serviceConfig } from './target.js'
import { CommandFailed, formatDuration, plural, positiveInteger, UsageError, type Command, type Io } from './command.js'
import { countsOf, differences, type CopyCounts } from './migrate-verify.js'

export const migrateCommand: Command = {
  name: 'migrate',
  usage: `Usage: plants migrate [--to postgres://USER:PASSWORD@HOST:PORT/DATABASE] [options]

Copies the embedded catalogue of a data folder into PostgreSQL, as the PostgreSQL store keeps it:
plants with their ids and versions (so ETags stay valid), the id sequence (an id handed out on
SQLite, even one since deleted, is never handed out again), the change feed with its sequence
numbers (clients resume where they were), the Idempotency-Keys still remembered, the trash, the
plants' history, the API keys, the webhooks (with their secrets, their place in the feed and their
recent attempts), the photos: each plant's list and every photo file (BLOB rows become bytea
rows, so every instance serves them), and the stock: the locations, each plant's level at each,
and the ledger of movements with its positions.

The target's schema is created (or brought up to date) by the store's own migrations; the target
must hold no catalogue yet. Everything is copied in one transaction, and before it commits the
copy is verified: the number of plants, tags, changes, keys, photo files, history versions and
webhooks, the inventory's counts, the id and feed sequences, a digest of every photo file (name,
references, bytes), of every webhook and of every plant read back from PostgreSQL must equal the
source's. A failed check commits
nothing.

The copy is a snapshot of the data folder when the command starts: stop the service's writes first
(stop it, or point its load balancer away), then start it with DATABASE_URL set to the target.

Options:
  --to URL           the PostgreSQL database (postgres:// or postgresql://); search_path and other
                     connection parameters in the URL are honoured (default: $DATABASE_URL)
  --data-dir DIR     the data folder to copy (default: $DATA_DIR, else ./data)
  --batch-size N     plants per INSERT (default 5000)
  -h, --help         this help`,
  options: {
    to: { type: 'string' },
    'data-dir': { type: 'string' },
    // Accepted to be refused with a way forward: --url names a running service in other commands.
    url: { type: 'string' },
    'batch-size': { type: 'string' }
  },
  run: runMigrate
}

async function runMigrate (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  if (values.url !== undefined) {
    throw new UsageError('migrate copies a data folder (--data-dir) into PostgreSQL (--to postgres://…), not from a running service (--url): run it on the service\'s host')
  }
  if (positionals.length > 0) throw new UsageError('migrate takes no FILE (the target goes in --to)')
  // The target defaults to the service's own DATABASE_URL: migrate, then start the service as configured.
  const to: string | undefined = values.to ?? (await serviceConfig(io)).databaseUrl
  if (to === undefined) throw new UsageError('--to postgres://… is required (or set DATABASE_URL, as for the service)')
  let target: PostgresAdmin
  try {
    target = await openCatalogueAdmin({ kind: 'postgres', databaseUrl: to })
  } catch (err) {
    throw err instanceof CommandFailed ? new UsageError(`--to: ${err.message.replace(/^DATABASE_URL/, 'the URL')}`) : err
  }
  const batchSize = positiveInteger('batch-size', values['batch-size'], 5000)
  const dataDir = await dataDirOf(values, io)
  const source = await openCatalogueAdmin({ kind: 'folder', dataDir })
  const started = Date.now()

  // One snapshot: every kind is read from the same moment, however long the copy takes.
  const snapshot = await admin(async () => source.snapshot())
  let expected: CopyCounts
  try {
    expected = await countsOf(snapshot)
    await target.receive(snapshot, {
      batchSize,
      verify: async (copy) => {
        const wrong = differences(expected, await countsOf(copy))
        if (wrong.length > 0) throw new CommandFailed(`the copy does not match the source (nothing committed): ${wrong.join(', ')}`)
        // Writes the service took while we copied are not in the copy: committed, they would be lost
        // on moving day by a script that started PostgreSQL without reading the exit code.
        const late = await feedHeadNow(await admin(async () => source.snapshot())) - expected.feedHead
        if (late > 0) {
          throw new CommandFailed(`${plural(late, 'change')} reached the data folder during the copy, so nothing was committed and ${target.address} is left empty: ` +
            'stop the service\'s writes and run migrate again')
        }
      }
    })
  } catch (err) {
    const failure = adminFailure(err)
    if (failure instanceof CommandFailed) throw failure
    throw new CommandFailed(`copying into ${target.address} failed, nothing committed: ${(err as Error).message}`)
  } finally {
    await snapshot.close()
  }

  // A write between the check above and the commit: said, not lost quietly.
  const after = await feedHeadNow(await admin(async () => source.snapshot()))
  io.stdout.write(`migrated the data folder ${dataDir} to ${target.address} in ${formatDuration(Date.now() - started)}\n` +
    `  plants          ${expected.plants.toLocaleString('en')} (last id handed out ${expected.lastId}; ${expected.inventory})\n` +
    `  tags            ${expected.tags.toLocaleString('en')}\n` +
    `  changes         ${expected.changes.toLocaleString('en')} (feed head ${expected.feedHead}, floor ${expected.feedFloor})\n` +
    `  idempotency keys ${expected.keys.toLocaleString('en')}\n` +
    `  photo files     ${expected.photoFiles.toLocaleString('en')}\n` +
    `  API keys        ${expected.apiKeys.toLocaleString('en')}\n` +
    `  in the trash    ${expected.trash.toLocaleString('en')}\n` +
    `  history         ${expected.history.toLocaleString('en')} versions\n` +
    `  webhooks        ${expected.webhooks.toLocaleString('en')} (with their secrets and places in the feed; ${plural(expected.webhookDeliveries, 'attempt')} in their logs)\n` +
    `  stock           ${plural(expected.locations, 'location')}, ${plural(expected.stockLevels, 'level')}, ${plural(expected.movements, 'movement')} in the ledger (last position ${expected.lastMovementSeq})\n` +
    `  reservations    ${expected.reservations.toLocaleString('en')} (${expected.heldReservations.toLocaleString('en')} held, still holding their units)\n` +
    '  verified: counts, the inventory, sequences, a digest of every plant, of every photo file, of every API key, of the trash, of the history and of the webhooks match the source, and so does a digest of the stock (locations, levels, the ledger, the reservations)\n')
  if (after > expected.feedHead) {
    io.stderr.write(`warning: ${plural(after - expected.feedHead, 'change')} reached the data folder after the snapshot and ${after - expected.feedHead === 1 ? 'is' : 'are'} not in PostgreSQL; stop the service's writes and migrate into an empty database again\n`)
    return 1
  }
  return 0
}

async function feedHeadNow (snapshot: CatalogueSnapshot): Promise<number> {
  try { return (await snapshot.tallies()).feedHead } finally { await snapshot.close() }
}
