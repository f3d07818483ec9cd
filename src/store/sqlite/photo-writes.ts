import type Database from 'better-sqlite3'
import { FILE_CHUNK_BYTES, fileNamesOf, reordered, withPhotoAdded, withPhotoRemoved, type NewPhoto, type Photo, type StoredFile } from '../../catalogue/photo.js'

// Photo files on SQLite: BLOBs in the catalogue's own database, written in the transaction that
// names them, so a committed record never names missing bytes and a backup holds both. A file is
// a row of photo_files (its name, references and size) and its bytes rows of photo_file_chunks,
// FILE_CHUNK_BYTES each: a body is served a chunk at a time, each chunk one short read, since
// better-sqlite3 has no incremental BLOB reads and substr() of a BLOB reads all of it first (on the
// event loop, for every chunk of a large file).

/** A file's bytes as the chunks it is stored in. */
export function chunksOf (bytes: Uint8Array): Uint8Array[] {
  const chunks: Uint8Array[] = []
  for (let at = 0; at < bytes.length; at += FILE_CHUNK_BYTES) chunks.push(bytes.subarray(at, at + FILE_CHUNK_BYTES))
  return chunks
}

/** The photo rules (catalogue/photo.ts) with the files they claim and release; each throws the rule's error. */
export interface PhotoFiles {
  /** The plant's photos with `added` appended (withPhotoAdded), its files stored. */
  add (photos: Photo[], added: NewPhoto): Photo[]
  /** The plant's photos without `photoId` (withPhotoRemoved), whose files lose a reference. */
  remove (photos: Photo[], photoId: string): Photo[]
  /** Drops a reference to each file of `photos` (their plant is deleted). */
  release (photos: Photo[]): void
  /** The plant's photos in `order` (reordered), their files untouched. */
  order (photos: Photo[], order: string[]): Photo[]
}

export function photoFiles (db: Database.Database): PhotoFiles {
  const s = {
    // A file already stored (the same picture uploaded again) gains a reference, its bytes untouched.
    claim: db.prepare<[string, number], number>('INSERT INTO photo_files (name, refs, size) VALUES (?, 1, ?) ON CONFLICT (name) DO UPDATE SET refs = refs + 1 RETURNING refs').pluck(),
    chunk: db.prepare('INSERT INTO photo_file_chunks (name, n, bytes) VALUES (?, ?, ?)'),
    unref: db.prepare('UPDATE photo_files SET refs = refs - 1 WHERE name = ?'),
    drop: db.prepare<[string], string>('DELETE FROM photo_files WHERE name = ? AND refs <= 0 RETURNING name').pluck(),
    dropChunks: db.prepare('DELETE FROM photo_file_chunks WHERE name = ?')
  }
  const release = (photos: Photo[]): void => {
    for (const photo of photos) {
      for (const name of fileNamesOf(photo)) {
        s.unref.run(name)
        if (s.drop.get(name) !== undefined) s.dropChunks.run(name)
      }
    }
  }
  return {
    add (photos, added) {
      const after = withPhotoAdded(photos, added.photo)
      for (const file of added.files) {
        if (s.claim.get(file.name, file.bytes.length) !== 1) continue
        chunksOf(file.bytes).forEach((chunk, n) => s.chunk.run(file.name, n, chunk))
      }
      return after
    },
    remove (photos, photoId) {
      const { photos: after, gone } = withPhotoRemoved(photos, photoId)
      release([gone])
      return after
    },
    release,
    order: reordered
  }
}

const NO_BYTES = new Uint8Array(0)

/** One file's size, and one of its chunks when asked, read on the store's read connection. */
export function photoFileReader (db: Database.Database): (name: string, chunk?: number) => StoredFile | undefined {
  const size = db.prepare<[string], number>('SELECT size FROM photo_files WHERE name = ?').pluck()
  const withChunk = db.prepare<[number, string], { size: number, chunk: Buffer | null }>(
    'SELECT f.size, c.bytes AS chunk FROM photo_files f LEFT JOIN photo_file_chunks c ON c.name = f.name AND c.n = ? WHERE f.name = ?')
  return (name, chunk) => {
    if (chunk === undefined) {
      const found = size.get(name)
      return found === undefined ? undefined : { size: found }
    }
    const row = withChunk.get(chunk, name)
    return row && { size: row.size, chunk: row.chunk ?? NO_BYTES }
  }
}

/**
 * Every stored file whole, one at a time, in name order (SQLite's BINARY collation): for copying
 * the catalogue elsewhere and for checks. One statement, so it may run inside a read transaction.
 */
export function * storedPhotoFiles (db: Database.Database): Generator<{ name: string, refs: number, bytes: Buffer }> {
  const rows = db.prepare<[], { name: string, refs: number, size: number, n: number, bytes: Buffer }>(
    'SELECT f.name, f.refs, f.size, c.n, c.bytes FROM photo_files f JOIN photo_file_chunks c ON c.name = f.name ORDER BY f.name, c.n')
  let file: { name: string, refs: number, bytes: Buffer, filled: number } | undefined
  for (const row of rows.iterate()) {
    if (row.n === 0) file = { name: row.name, refs: row.refs, bytes: Buffer.allocUnsafe(row.size), filled: 0 }
    if (!file || file.name !== row.name) continue
    file.filled += row.bytes.copy(file.bytes, file.filled)
    if (file.filled === file.bytes.length) yield { name: file.name, refs: file.refs, bytes: file.bytes }
  }
}

/**
 * Photo URLs of plants whose file is not stored: always 0 in a committed database, since a photo
 * and its files commit together (the backup and the crash tests check it).
 */
export const DANGLING_PHOTO_FILES = `
SELECT count(*) FROM plants p, json_each(p.photos) ph,
  json_each(json_array(ph.value ->> '$.urls.thumb', ph.value ->> '$.urls.display', ph.value ->> '$.urls.full')) u
WHERE NOT EXISTS (SELECT 1 FROM photo_files f WHERE f.name = substr(u.value, ${'/v3/photos/'.length + 1}))`
