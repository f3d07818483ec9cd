import { createHash } from 'node:crypto'
import type { CatalogueSnapshot, ColumnRow, Kind } from '../store/admin-store.js'

// What `plants migrate` checks before its copy commits: counts and digests of every kind, read
// through the admin interface from the source and from the copy alike, so they must come out equal.

export interface CopyCounts {
  plants: number,
  inventory: string,
  tags: number,
  changes: number,
  keys: number,
  lastId: number,
  feedHead: number,
  feedFloor: number,
  digest: string,
  photoFiles: number,
  fileDigest: string,
  apiKeys: number,
  apiKeyDigest: string,
  trash: number,
  trashDigest: string,
  history: number,
  historyDigest: string,
  webhooks: number,
  webhookDeliveries: number,
  webhookDigest: string,
  locations: number,
  stockLevels: number,
  movements: number,
  lastMovementSeq: number,
  stockDigest: string,
  reservations: number,
  /** Of them, those still held (their units among the levels' reserved). */
  heldReservations: number
}

const PAGE = 5000

/** Each row of a kind into `hash`, one line each; the count of them. */
async function digestRows (snapshot: CatalogueSnapshot, kind: Kind, hash: ReturnType<typeof createHash>, line: (row: any) => string): Promise<number> {
  let count = 0
  for await (const page of snapshot.rows(kind, PAGE)) {
    for (const row of page) {
      hash.update(line(row))
      count++
    }
  }
  return count
}

/** A webhook's or an attempt's columns, BIGINTs read as text by an older reader made numbers again. */
const columns = (row: ColumnRow): string => `${JSON.stringify(Object.values(row).map((v) => typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v))}\n`

export async function countsOf (snapshot: CatalogueSnapshot): Promise<CopyCounts> {
  const t = await snapshot.tallies()
  // Every plant in id order, its photo list included.
  const plants = createHash('sha256')
  await digestRows(snapshot, 'plants', plants, (r) => `${JSON.stringify([r.id, r.name, r.category, r.tags, r.status, r.version, r.photos, r.description, r.price, r.sku, r.barcode, r.created_at, r.updated_at, r.low_stock_at, r.on_hand, r.reserved, r.available])}\n`)
  // Every photo file in name order: its name, reference count and a hash of its bytes.
  const files = createHash('sha256')
  const photoFiles = await digestRows(snapshot, 'photoFiles', files, (f) => `${f.name}\t${f.refs}\t${createHash('sha256').update(f.bytes).digest('base64url')}\n`)
  // Every API key, its hash and times included (name order: both engines read bytes in that order).
  const keys = createHash('sha256')
  const apiKeys = await digestRows(snapshot, 'apiKeys', keys, (r) => `${JSON.stringify([r.name, r.scope, r.hash, r.created_at, r.expires_at, r.last_used_at, r.revoked_at])}\n`)
  const trash = createHash('sha256')
  const trashed = await digestRows(snapshot, 'trash', trash, (r) => `${JSON.stringify([r.id, r.plant, r.version, r.trashed_at, r.trashed_by])}\n`)
  const history = createHash('sha256')
  const versions = await digestRows(snapshot, 'history', history, (r) => `${JSON.stringify([r.plant_id, r.version, r.kind, r.at, r.actor, r.changes])}\n`)
  const webhooks = createHash('sha256')
  const subscriptions = await digestRows(snapshot, 'webhooks', webhooks, columns)
  webhooks.update('deliveries\n')
  const deliveries = await digestRows(snapshot, 'webhookDeliveries', webhooks, columns)
  // Stock: the locations, every level, and the ledger movement by movement, with its positions.
  const stock = createHash('sha256')
  const locations = await digestRows(snapshot, 'locations', stock, (r) => `${JSON.stringify([r.name, r.created_at])}\n`)
  stock.update('levels\n')
  const stockLevels = await digestRows(snapshot, 'stockLevels', stock, (r) => `${JSON.stringify([r.plant_id, r.location, r.on_hand, r.reserved])}\n`)
  stock.update('movements\n')
  const movements = await digestRows(snapshot, 'stockMovements', stock, (r) =>
    `${JSON.stringify([r.seq, r.plant_id, r.at, r.actor, r.location, r.delta, r.reason, r.reference, r.on_hand_after])}\n`)
  // The reservations, each with its state and lines (the open ones carry on holding after the move).
  stock.update('reservations\n')
  let heldReservations = 0
  const reservations = await digestRows(snapshot, 'reservations', stock, (r) => {
    if (r.state === 'held') heldReservations++
    return `${JSON.stringify([r.id, r.state, r.lines, Number(r.created_at), Number(r.expires_at), r.ended_at === null ? null : Number(r.ended_at), r.actor])}\n`
  })
  return {
    plants: t.plants,
    inventory: `available ${t.inventory.available}, pending ${t.inventory.pending}, sold ${t.inventory.sold}`,
    tags: t.tags,
    changes: t.changes,
    keys: t.idempotencyKeys,
    lastId: t.lastId,
    feedHead: t.feedHead,
    feedFloor: t.feedFloor,
    digest: plants.digest('hex'),
    photoFiles,
    fileDigest: files.digest('hex'),
    apiKeys,
    apiKeyDigest: keys.digest('hex'),
    trash: trashed,
    trashDigest: trash.digest('hex'),
    history: versions,
    historyDigest: history.digest('hex'),
    webhooks: subscriptions,
    webhookDeliveries: deliveries,
    webhookDigest: webhooks.digest('hex'),
    locations,
    stockLevels,
    movements,
    lastMovementSeq: t.lastMovementSeq,
    stockDigest: stock.digest('hex'),
    reservations,
    heldReservations
  }
}

/** Each count or digest of the copy that differs from the source's, said as "plants 3 instead of 4". */
export function differences (expected: CopyCounts, copied: CopyCounts): string[] {
  return (Object.keys(expected) as Array<keyof CopyCounts>).filter((k) => expected[k] !== copied[k])
    .map((k) => `${k} ${String(copied[k])} instead of ${String(expected[k])}`)
}
