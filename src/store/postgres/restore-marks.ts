import type pg from 'pg'
import { AdminRefused } from '../admin-store.js'
import { toRecord, type Plant } from '../../catalogue/plant.js'
import { restoreChanges, type RestoreChanges, type Told } from '../../catalogue/restore-changes.js'
import { combine, type OwnMarks, type RestoreKey, type RestoreMarks, type RestoreOutcome } from '../restore-marks.js'
import { ROW_COLUMNS, toPlant, type PlantRow } from './group-writes.js'

// The restore marks on PostgreSQL (store/restore-marks.ts says what they are and why). The
// documented procedure reads them from the database being replaced before pg_restore, and applies
// them to the restored one before any instance starts (docs/backup-restore.md: "Restoring from a backup").

type Client = Pick<pg.Client, 'query'>

const MARKS = `SELECT
  -- With caching, last_value may be past what was handed out: a high-water mark may overshoot.
  (SELECT last_value FROM pg_sequences WHERE format('%I.%I', schemaname, sequencename) = pg_get_serial_sequence('plants', 'id')) AS last_value,
  (SELECT coalesce(max(id), 0) FROM plants) AS max_id,
  (SELECT max(value) FROM meta WHERE key IN ('feed_head', 'feed_floor')) AS head,
  (SELECT coalesce(max(version), 0) FROM plants) AS plant_version,
  (SELECT coalesce(max(version), 0) FROM changes) AS change_version`
// The trash holds ids and versions too (a catalogue from before it has none).
const TRASH_MARKS = 'SELECT coalesce(max(id), 0) AS max_id, coalesce(max(version), 0) AS version FROM trash'

const ms = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::bigint AS ${column}`
const KEYS = `SELECT name, scope, hash, ${ms('created_at')}, ${ms('expires_at')}, ${ms('last_used_at')}, ${ms('revoked_at')} FROM api_keys ORDER BY name`

const num = (v: unknown): number => v === null || v === undefined ? 0 : Number(v)
const orNull = (v: unknown): number | null => v === null ? null : Number(v)

/** The ledger's highest position handed out (a database from before stock has none). */
async function lastMovementSeq (client: Client): Promise<number> {
  const { rows: [{ name }] } = await client.query<{ name: string | null }>("SELECT CASE WHEN to_regclass('stock_movements') IS NULL THEN NULL ELSE pg_get_serial_sequence('stock_movements', 'seq') END AS name")
  if (name === null) return 0
  const { rows: [s] } = await client.query(`SELECT last_value, is_called, (SELECT coalesce(max(seq), 0) FROM stock_movements) AS max_seq FROM ${name}`)
  return Math.max(s.is_called === true ? num(s.last_value) : 0, num(s.max_seq))
}

async function ownMarks (client: Client): Promise<OwnMarks> {
  const { rows: [r] } = await client.query(MARKS)
  const { rows: [present] } = await client.query<{ trash: boolean }>("SELECT to_regclass('trash') IS NOT NULL AS trash")
  const t = present.trash ? (await client.query(TRASH_MARKS)).rows[0] : { max_id: 0, version: 0 }
  const feedHead = num(r.head)
  return {
    lastId: Math.max(num(r.last_value), num(r.max_id), num(t.max_id)),
    feedHead,
    versionHigh: Math.max(feedHead, num(r.plant_version), num(r.change_version), num(t.version))
  }
}

// Every plant as [id, version] in one text: a row object each would take some 100 bytes a plant.
const PLANT_VERSIONS = "SELECT coalesce(json_agg(json_build_array(id, version) ORDER BY id), '[]')::text AS plants FROM plants"
// The plants changed after the slowest webhook's place (none without a webhook).
const UNSURE = `SELECT coalesce(json_agg(DISTINCT plant_id), '[]')::text AS unsure FROM changes
WHERE seq > (SELECT min(cursor) FROM webhooks)`

const plantVersions = async (client: Client): Promise<Array<[number, number]>> =>
  JSON.parse((await client.query<{ plants: string }>(PLANT_VERSIONS)).rows[0].plants)

async function readTold (client: Client): Promise<Told> {
  const { rows: [present] } = await client.query<{ webhooks: boolean }>("SELECT to_regclass('webhooks') IS NOT NULL AS webhooks")
  const unsure = present.webhooks ? JSON.parse((await client.query<{ unsure: string }>(UNSURE)).rows[0].unsure) as number[] : []
  return { plants: await plantVersions(client), unsure }
}

/** The restored plants a restore sends, as their records, a chunk at a time. */
async function * records (client: Client, ids: number[]): AsyncGenerator<{ record: Plant, version: number }> {
  for (let i = 0; i < ids.length; i += 1000) {
    const { rows } = await client.query(`SELECT ${ROW_COLUMNS} FROM plants WHERE id = ANY ($1::bigint[]) ORDER BY id`, [ids.slice(i, i + 1000)])
    // This connection hands BIGINT over as text (the store's own parses it).
    for (const r of rows) {
      const row: PlantRow = { ...r, id: Number(r.id), price: r.price === null ? null : Number(r.price), created_at: Number(r.created_at), updated_at: Number(r.updated_at) }
      const plant = toPlant(row)
      yield { record: toRecord(plant), version: plant.version }
    }
  }
}

/**
 * Connections the service's instances hold to this database (their pools name themselves
 * 'plant-catalogue'): marks saved while one runs miss what it hands out next, and marks applied
 * under one would move the catalogue it is serving.
 */
export async function serviceConnections (client: Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = 'plant-catalogue' AND pid <> pg_backend_pid()`)
  return rows[0].n
}

/** What the catalogue `client` connects to has handed out, and what its webhook receivers may hold (one REPEATABLE READ snapshot). */
export async function readMarks (client: Client): Promise<RestoreMarks> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  try {
    const marks = await ownMarks(client)
    const { rows } = await client.query(KEYS)
    const keys = rows.map((r): RestoreKey => ({
      name: r.name, scope: r.scope, hash: r.hash, createdAt: num(r.created_at), expiresAt: orNull(r.expires_at), lastUsedAt: orNull(r.last_used_at), revokedAt: orNull(r.revoked_at)
    }))
    return { ...marks, keys, told: await readTold(client), lastMovementSeq: await lastMovementSeq(client) }
  } finally {
    await client.query('COMMIT').catch(() => {})
  }
}

/** Moves the restored catalogue (migrated) past `replaced`, in one transaction. */
export async function applyMarks (client: Client, replaced: RestoreMarks): Promise<RestoreOutcome> {
  await client.query('BEGIN')
  try {
    // No instance should be running; if one is, its writes wait for this rather than slip between.
    await client.query('LOCK TABLE plants, meta, changes IN EXCLUSIVE MODE')
    const running = await serviceConnections(client)
    if (running > 0) throw new AdminRefused(`the service is connected to this database (${running} connection${running === 1 ? '' : 's'}): stop every instance, then apply the marks before any starts; nothing was changed`)
    // Applying moves the floor past the marks' head: a floor already past it means these marks (or
    // later ones) were applied here, and applying again would undo what was done since.
    const { rows: [{ floor: ownFloor }] } = await client.query<{ floor: string }>("SELECT value AS floor FROM meta WHERE key = 'feed_floor'")
    if (Number(ownFloor) > replaced.feedHead) {
      throw new AdminRefused(`this database is past these marks (its feed starts after ${ownFloor}, the marks' head is ${replaced.feedHead}): they were applied already. Restore the dump again (pg_restore) before applying them; nothing was changed`)
    }
    const marks = combine(replaced, await ownMarks(client))
    const floor = marks.feedHead + 1
    // Compared before the versions move: told holds the versions the replaced catalogue handed out.
    const tell = replaced.told === undefined ? undefined : restoreChanges(replaced.told, await plantVersions(client))
    const { rowCount } = await client.query('UPDATE plants SET version = version + $1', [marks.versionHigh])
    // A trashed plant's restore takes the entry's version + 1: it moves past too.
    await client.query('UPDATE trash SET version = version + $1', [marks.versionHigh])
    // The history moves with them, so a revert still walks back from the plant's version.
    await client.query('UPDATE history SET version = version + $1', [marks.versionHigh])
    await client.query('DELETE FROM changes')
    // A change is numbered feed_head + 1: the floor itself is never one, so the old head is gone too.
    await client.query("UPDATE meta SET value = $1 WHERE key IN ('feed_head', 'feed_floor')", [floor])
    if (tell !== undefined) await tellReceivers(client, tell, floor, marks.versionHigh)
    // History cursors from before name a plant up to lastId and a version up to the shift (catalogue/history.ts cursorBeforeRestore).
    await client.query(`INSERT INTO meta (key, value) VALUES ('restore_last_id', $1), ('restore_version_shift', $2)
      ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [marks.lastId, marks.versionHigh])
    if (marks.lastId > 0) await client.query("SELECT setval(pg_get_serial_sequence('plants', 'id'), $1, true)", [marks.lastId])
    const ledger = Math.max(replaced.lastMovementSeq ?? 0, await lastMovementSeq(client))
    if (ledger > 0) await client.query("SELECT setval(pg_get_serial_sequence('stock_movements', 'seq'), $1, true)", [ledger])
    // Webhooks resume at the floor: what follows tells their receivers what the restore undid.
    await client.query('UPDATE webhooks SET cursor = $1, attempts = 0, next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL', [floor])
    await client.query('DELETE FROM api_keys')
    const at = (v: number | null): string | null => v === null ? null : new Date(v).toISOString()
    for (const k of replaced.keys) {
      await client.query('INSERT INTO api_keys (name, scope, hash, created_at, expires_at, last_used_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [k.name, k.scope, k.hash, at(k.createdAt), at(k.expiresAt), at(k.lastUsedAt), at(k.revokedAt)])
    }
    await client.query('COMMIT')
    return { plants: rowCount ?? 0, lastId: marks.lastId, feedFloor: floor, versionShift: marks.versionHigh, keys: replaced.keys.length, told: tell === undefined ? null : tell.deleted.length + tell.sent.length }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  }
}

const APPEND = `INSERT INTO changes (seq, kind, plant_id, version, plant, at, actor)
SELECT $1::bigint + n, kind, plant_id, version, plant, $2::bigint, 'cli'
FROM unnest($3::text[], $4::bigint[], $5::int[], $6::text[]) WITH ORDINALITY AS c (kind, plant_id, version, plant, n)`

/** Writes the changes that tell receivers what the restore undid, after the floor, and moves the head past them. */
async function tellReceivers (client: Client, tell: RestoreChanges, floor: number, versionHigh: number): Promise<void> {
  let head = floor
  const append = async (kinds: string[], ids: number[], versions: number[], plants: Array<string | null>): Promise<void> => {
    if (kinds.length === 0) return
    await client.query(APPEND, [head, Date.now(), kinds, ids, versions, plants])
    head += kinds.length
  }
  // Above every version handed out, and below any the restored catalogue gives the plant later
  // (a trashed plant's restore takes its moved-up version + 1).
  for (let i = 0; i < tell.deleted.length; i += 1000) {
    const ids = tell.deleted.slice(i, i + 1000)
    await append(ids.map(() => 'deleted'), ids, ids.map(() => versionHigh + 1), ids.map(() => null))
  }
  const kinds = new Map(tell.sent.map(({ id, kind }) => [id, kind]))
  let batch: { kinds: string[], ids: number[], versions: number[], plants: string[] } = { kinds: [], ids: [], versions: [], plants: [] }
  for await (const { record, version } of records(client, tell.sent.map(({ id }) => id))) {
    batch.kinds.push(kinds.get(record.id)!)
    batch.ids.push(record.id)
    batch.versions.push(version)
    batch.plants.push(JSON.stringify(record))
    if (batch.ids.length === 1000) {
      await append(batch.kinds, batch.ids, batch.versions, batch.plants)
      batch = { kinds: [], ids: [], versions: [], plants: [] }
    }
  }
  await append(batch.kinds, batch.ids, batch.versions, batch.plants)
  await client.query("UPDATE meta SET value = $1 WHERE key = 'feed_head'", [head])
}
