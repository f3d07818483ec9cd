import { LRUCache } from 'lru-cache'
import type { PoolClient } from 'pg'
import { PlantNotFound, VersionMismatch } from '../../catalogue/errors.js'
import { FILE_CHUNK_BYTES, fileNamesOf, reordered, withPhotoAdded, withPhotoRemoved, type NewPhoto, type Photo, type StoredFile } from '../../catalogue/photo.js'
import type { Tx } from './group-commit.js'
import { ROW_COLUMNS, type PlantRow } from './group-writes.js'

// Photo files on PostgreSQL: a table of bytea in the shared database, so every instance serves
// every photo, written in the transaction that names them. refs counts the photos naming a file.
// Races between instances are settled by the file's row lock: a claim (INSERT … ON CONFLICT DO
// UPDATE) and a release (UPDATE refs - 1, then DELETE at 0) of one file wait for each other, and
// an insert whose conflicting row was deleted meanwhile inserts it again, so a committed photo
// never names a file another instance has just removed.

const CLAIM = `INSERT INTO photo_files (name, refs, bytes) VALUES ($1, 1, $2)
ON CONFLICT (name) DO UPDATE SET refs = photo_files.refs + 1`
const UNREF = 'UPDATE photo_files SET refs = refs - 1 WHERE name = $1'
const DROP = 'DELETE FROM photo_files WHERE name = $1 AND refs <= 0'

/** The plant's row as stored (text in its stored form), with its photos parsed. */
export interface PhotoWrite { row: Omit<PlantRow, 'id' | 'photos'>, /** The photos before the write. */ before: Photo[], photos: Photo[], version: number, /** The write's time: updatedAt. */ at: number }
type Current = PhotoWrite['row'] & { photos: string }

/** Drops a reference to each file of `photos`, in name order (two instances lock files in one order). */
export async function releaseFiles (tx: Tx, photos: Photo[]): Promise<void> {
  const names = photos.flatMap(fileNamesOf).sort()
  for (const name of names) {
    await tx.query(UNREF, [name])
    await tx.query(DROP, [name])
  }
}

/** Locks the plant's row and checks If-Match; the row as it is. */
async function current (tx: Tx, id: number, expectedVersions: number[] | undefined): Promise<Current> {
  const { rows: [row] } = await tx.query<Current>(`SELECT ${ROW_COLUMNS} FROM plants WHERE id = $1 FOR UPDATE`, [id])
  if (!row) throw new PlantNotFound()
  if (expectedVersions && !expectedVersions.includes(row.version)) throw new VersionMismatch()
  return row
}

/** Writes the plant's new photo list and version. */
async function setPhotos (tx: Tx, id: number, row: Current, photos: Photo[], now: number): Promise<PhotoWrite> {
  const version = row.version + 1
  await tx.query('UPDATE plants SET photos = $2, version = $3, updated_at = $4 WHERE id = $1', [id, JSON.stringify(photos), version, now])
  return { row, before: JSON.parse(row.photos) as Photo[], photos, version, at: now }
}

export async function addPhoto (tx: Tx, id: number, added: NewPhoto, expectedVersions: number[] | undefined, now: number): Promise<PhotoWrite> {
  const row = await current(tx, id, expectedVersions)
  const photos = withPhotoAdded(JSON.parse(row.photos) as Photo[], added.photo)
  for (const file of [...added.files].sort((a, b) => a.name < b.name ? -1 : 1)) {
    await tx.query(CLAIM, [file.name, Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength)])
  }
  return setPhotos(tx, id, row, photos, now)
}

export async function removePhoto (tx: Tx, id: number, photoId: string, expectedVersions: number[] | undefined, now: number): Promise<PhotoWrite> {
  const row = await current(tx, id, expectedVersions)
  const { photos, gone } = withPhotoRemoved(JSON.parse(row.photos) as Photo[], photoId)
  await releaseFiles(tx, [gone])
  return setPhotos(tx, id, row, photos, now)
}

export async function orderPhotos (tx: Tx, id: number, order: string[], expectedVersions: number[] | undefined, now: number): Promise<PhotoWrite> {
  const row = await current(tx, id, expectedVersions)
  return setPhotos(tx, id, row, reordered(JSON.parse(row.photos) as Photo[], order), now)
}

/** Chunks of files this small are kept in memory once read (thumbs and display sizes: most of the reads). */
const CACHED_FILE_BYTES = 256 * 1024
/** The memory those copies may take in all. */
const CACHE_BYTES = 16 * 1024 * 1024

/** What one read asks for: a file's size, and its chunk `chunk` when given (ReadBatch's key). */
export const fileReadKey = (name: string, chunk?: number): string => `${chunk ?? -1}/${name}`

const READ_FILES = `
SELECT w.key, length(f.bytes) AS size,
  CASE WHEN w.n < 0 OR w.key = ANY ($4) THEN NULL ELSE substring(f.bytes FROM w.n * $5 + 1 FOR $5) END AS chunk
FROM unnest($1::text[], $2::text[], $3::int[]) AS w (key, name, n) JOIN photo_files f ON f.name = w.name`

/**
 * Reads photo files: the reads of one turn of the event loop share one query (ReadBatch), as GETs
 * by id do. Each asks for a file's size (length() reads only the bytes' header), and for one chunk
 * of its bytes when a body is served: substring() of the out-of-line (EXTERNAL, uncompressed)
 * bytes fetches only the TOAST rows it covers, so a chunk costs its own size, not the file's.
 * A file's name is its content's hash, so a chunk kept in memory never goes stale; whether the file
 * still exists is asked every time (a file another instance has just removed is not served), but
 * the bytes of a small file only once: the bytes were what cost (hex text twice their size), and
 * thumbs were served at a fraction of the rate of GET by id.
 */
export class FileReader {
  private readonly kept = new LRUCache<string, Uint8Array>({ maxSize: CACHE_BYTES, sizeCalculation: (bytes) => Math.max(1, bytes.length) })

  /** Answers each key of fileReadKey() whose file exists. */
  async read (client: PoolClient, keys: string[]): Promise<Map<string, StoredFile>> {
    // Taken now: a copy evicted while the query runs must still answer it.
    const known = new Map<string, Uint8Array>()
    const names: string[] = []
    const chunks: number[] = []
    for (const key of keys) {
      const slash = key.indexOf('/')
      chunks.push(Number(key.slice(0, slash)))
      names.push(key.slice(slash + 1))
      const bytes = this.kept.get(key)
      if (bytes) known.set(key, bytes)
    }
    const { rows } = await client.query<{ key: string, size: number, chunk: Buffer | null }>({
      name: 'photo-files-read',
      text: READ_FILES,
      values: [keys, names, chunks, [...known.keys()], FILE_CHUNK_BYTES]
    })
    const found = new Map<string, StoredFile>()
    for (const { key, size, chunk } of rows) {
      if (chunk && size <= CACHED_FILE_BYTES) this.kept.set(key, chunk)
      found.set(key, key.startsWith('-1/') ? { size } : { size, chunk: chunk ?? known.get(key)! })
    }
    return found
  }
}
