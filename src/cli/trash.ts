import { TrashedNotFound } from '../catalogue/errors.js'
import { TRASH_PAGE_MAX, type TrashedPlant, type TrashPosition } from '../catalogue/trash.js'
import type { PlantStore } from '../store/plant-store.js'
import { auditLog } from './audit.js'
import { withCatalogueStore } from './with-store.js'
import { CommandFailed, jsonArray, UsageError, type Command, type Io } from './command.js'

export const trashCommand: Command = {
  name: 'trash',
  usage: `Usage: plants trash list [--json] [options]
       plants trash purge ID [options]

The trash stored in the catalogue (the same as GET /v3/trash and DELETE /v3/trash/{id}), in its
own database: a data folder or DATABASE_URL, not a running service (--url): over HTTP, use
/v3/trash with a write key (an admin key to purge).

  list     every deleted plant, newest first: its ID, NAME, when it was deleted and by whom, and
           when the trash purges it by itself (TRASH_RETENTION_DAYS after the delete)
  purge    removes the plant from the trash for good, with its history and the photo files
           nothing else names; it cannot be undone. Writes the service's log line for it
           (plant purged from the trash: JSON, on standard error)

Options:
  --json           list: a JSON array, each entry as GET /v3/trash shows it
  --data-dir DIR   the service's data folder (default: the catalogue in $DATABASE_URL when set,
                   else $DATA_DIR, else ./data); one that holds no catalogue is refused
  -h, --help       this help`,
  options: {
    json: { type: 'boolean' },
    'data-dir': { type: 'string' },
    // Accepted to be refused with a way forward: --url names a running service in other commands.
    url: { type: 'string' }
  },
  run: runTrash
}

async function runTrash (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  const [action, arg, ...extra] = positionals
  if (extra.length > 0) throw new UsageError(`unexpected ${JSON.stringify(extra[0])}`)
  if (values.url !== undefined) {
    throw new UsageError('trash works on the catalogue\'s own database (--data-dir, or DATABASE_URL), not on a running service (--url): ' +
      'over HTTP, use /v3/trash with a write key (an admin key to purge)')
  }
  if (values.json === true && action !== 'list') throw new UsageError('--json goes with list')
  if (action === 'list') {
    if (arg !== undefined) throw new UsageError('list takes no argument')
    return await withCatalogueStore('trash', values, io, async (store, config) => {
      const entries = await everyEntry(store)
      if (values.json === true) {
        const { entryOf } = await import('../plants/trash-routes.js')
        io.stdout.write(jsonArray(entries.map((t) => entryOf(t, store.trashRetentionMs))))
      } else {
        io.stdout.write(table(entries, config.trashRetentionMs))
      }
      return 0
    })
  }
  if (action === 'purge') {
    if (arg === undefined) throw new UsageError('purge takes the plant\'s ID (plants trash list shows them)')
    if (!/^[1-9]\d{0,14}$/.test(arg)) throw new UsageError(`the plant's ID is a positive integer, not ${JSON.stringify(arg)}`)
    const id = Number(arg)
    return await withCatalogueStore('trash', values, io, async (store, config) => {
      try {
        await store.purgeTrashed(id)
      } catch (err) {
        if (err instanceof TrashedNotFound) throw new CommandFailed(`no plant ${id} in the trash (never deleted, restored, or purged already; plants trash list shows it)`)
        throw err
      }
      auditLog(io, config, { plant: id }, 'plant purged from the trash')
      io.stdout.write(`purged plant ${id} from the trash, for good\n`)
      return 0
    })
  }
  throw new UsageError(action === undefined ? 'say list or purge' : `unknown action ${JSON.stringify(action)}: say list or purge`)
}

/** The whole trash, newest first: its size is bounded by the retention. */
async function everyEntry (store: PlantStore): Promise<TrashedPlant[]> {
  const entries: TrashedPlant[] = []
  let after: TrashPosition | undefined
  for (;;) {
    const page = await store.trash(after, TRASH_PAGE_MAX)
    entries.push(...page)
    if (page.length < TRASH_PAGE_MAX) return entries
    const last = page[page.length - 1]
    after = { trashedAt: last.trashedAt, id: last.plant.id }
  }
}

const iso = (ms: number): string => new Date(ms).toISOString()

function table (entries: TrashedPlant[], retentionMs: number): string {
  if (entries.length === 0) return 'the trash is empty\n'
  const rows = [['ID', 'NAME', 'DELETED', 'BY', 'PURGED BY ITSELF AT'],
    ...entries.map((e) => [String(e.plant.id), e.plant.name.replace(/\s+/g, ' '), iso(e.trashedAt), e.trashedBy ?? '-', iso(e.trashedAt + retentionMs)])]
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd()).join('\n') + '\n'
}
