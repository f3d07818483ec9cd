import type pg from 'pg'
import { HistoryCursorGone, PlantNotFound, VersionMismatch, VersionNotKept } from '../../catalogue/errors.js'
import { cursorBeforeRestore, entryOf, fieldsAt, kindOfCode, plantFieldsOf, sameFields, type FieldChanges, type HistoryEntry } from '../../catalogue/history.js'
import type { StoredPlant } from '../../catalogue/plant.js'
import type { RevertOptions } from '../plant-store.js'
import { purgeInBatches } from '../../catalogue/purge.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import type { Tx } from './group-commit.js'
import { ROW_COLUMNS, toPlant, writeGroup, type PlantRow } from './group-writes.js'

// Plants' history on PostgreSQL (migrations/013_history.sql). Each write's statement records its
// versions (group-writes.ts, group-commit.ts); here: a page, a revert, and the retention purge.

// One statement: whether the plant is known (live or in the trash), what the last restore moved past, and the page.
const PAGE = `
SELECT k.known, k.last_id, k.version_shift, h.version, h.kind, h.at, h.actor, h.changes
FROM (SELECT EXISTS (SELECT 1 FROM plants WHERE id = $1) OR EXISTS (SELECT 1 FROM trash WHERE id = $1) AS known,
  (SELECT value FROM meta WHERE key = 'restore_last_id') AS last_id, (SELECT value FROM meta WHERE key = 'restore_version_shift') AS version_shift) k
LEFT JOIN LATERAL (
  SELECT version, kind, at, actor, changes FROM history WHERE k.known AND plant_id = $1 AND version < $2 ORDER BY version DESC LIMIT $3
) h ON true
ORDER BY h.version DESC`

const INT_MAX = 2_147_483_647

interface PageRow { known: boolean, last_id: string | number | null, version_shift: string | number | null, version: number | null, kind: number, at: string | number, actor: string, changes: string }

/** A page of a plant's history, newest first, below `before`; undefined when no plant, live or trashed, has the id. */
export async function readHistory (client: Pick<pg.PoolClient, 'query'>, id: number, before: number | undefined, limit: number): Promise<HistoryEntry[] | undefined> {
  // Versions are INTEGER here: a cursor naming a larger one is as good as none.
  const { rows } = await client.query<PageRow>({ name: 'history-page', text: PAGE, values: [id, Math.min(before ?? INT_MAX, INT_MAX), limit] })
  if (!rows[0].known) return undefined
  const { last_id: lastId, version_shift: versionShift } = rows[0]
  const past = lastId === null || versionShift === null ? undefined : { lastId: Number(lastId), versionShift: Number(versionShift) }
  if (cursorBeforeRestore(id, before, past)) throw new HistoryCursorGone()
  return rows.filter((r) => r.version !== null).map((r) => ({
    version: r.version!, at: timestamp(Number(r.at)), actor: r.actor, kind: kindOfCode(r.kind), ...entryOf(r.changes)
  }))
}

/**
 * A revert, as a unit of work of the group commit: the plant locked, its history walked back to
 * `version` (the status kept unless asked for), and the fields written through the plants' own set-based write (an 'updated' change,
 * its SKU claimed as any update's); nothing at all when they are the fields already.
 */
export async function revertPlant (tx: Tx, id: number, version: number, { expectedVersions, status = false }: RevertOptions, actor: string, now: number, idempotencyTtlMs: number): Promise<StoredPlant> {
  const { rows: [row] } = await tx.query<PlantRow>(`SELECT ${ROW_COLUMNS} FROM plants WHERE id = $1 FOR UPDATE`, [id])
  if (!row) throw new PlantNotFound()
  const current = toPlant(row)
  if (expectedVersions && !expectedVersions.includes(current.version)) throw new VersionMismatch()
  const { rows } = await tx.query<{ version: number, changes: string }>(
    'SELECT version, changes FROM history WHERE plant_id = $1 AND version >= $2 ORDER BY version DESC', [id, version])
  const fieldsNow = plantFieldsOf(current)
  const then = fieldsAt(fieldsNow, current.version, version, rows.map((r) => ({ version: r.version, changes: JSON.parse(r.changes) as FieldChanges })))
  if (then === undefined) throw new VersionNotKept()
  const fields = status ? then : { ...then, status: fieldsNow.status }
  if (sameFields(fields, fieldsNow)) return current
  const [[outcome], head] = await writeGroup(tx, [{ kind: 'update', id, fields, expectedVersions: [current.version], actor, reverted: true }], now, idempotencyTtlMs)
  if (outcome === undefined) throw new Error('a revert was put off')
  if (!outcome.ok) throw outcome.error
  if (head !== undefined) tx.moved(head)
  return outcome.value as StoredPlant
}

/** How many rows one transaction of the retention purge deletes. */
const PURGE_BATCH = 5000

/**
 * Deletes the versions committed at or before `cutoff`, PURGE_BATCH a transaction (the BRIN index
 * on `at` finds them among the oldest blocks). Instances purging at once only repeat each other's work.
 */
export async function purgeExpiredHistory (transaction: (work: (c: pg.PoolClient) => Promise<number>) => Promise<number>, cutoff: number): Promise<number> {
  return await purgeInBatches((batch) => transaction(async (c) => {
    const { rowCount } = await c.query('DELETE FROM history WHERE ctid = ANY (ARRAY (SELECT ctid FROM history WHERE at <= $1 LIMIT $2))', [cutoff, batch])
    return rowCount ?? 0
  }), PURGE_BATCH)
}
