import type Database from 'better-sqlite3'
import { fileNamesOf, MAX_PHOTOS, type NewPhoto, type Photo } from '../../catalogue/photo.js'

// Photo files on SQLite: BLOBs in the catalogue's own database, written in the transaction that
// names them, so a committed record never names missing bytes and a backup holds both.

export type PhotoRefusal = 'photo-limit' | 'photo-not-found'

export interface PhotoFiles {
  /** The plant's photos with `added` appended; the refusal when it already has the most allowed. */
  add (photos: Photo[], added: NewPhoto): Photo[] | PhotoRefusal
  /** The plant's photos without `photoId`, whose files lose a reference. */
  remove (photos: Photo[], photoId: string): Photo[] | PhotoRefusal
  /** Drops a reference to each file of `photos` (their plant is deleted). */
  release (photos: Photo[]): void
}

export function photoFiles (db: Database.Database): PhotoFiles {
  const s = {
    // A file already stored (the same picture uploaded again) gains a reference, its bytes untouched.
    claim: db.prepare('INSERT INTO photo_files (name, refs, bytes) VALUES (?, 1, ?) ON CONFLICT (name) DO UPDATE SET refs = refs + 1'),
    unref: db.prepare('UPDATE photo_files SET refs = refs - 1 WHERE name = ?'),
    drop: db.prepare('DELETE FROM photo_files WHERE name = ? AND refs <= 0')
  }
  const release = (photos: Photo[]): void => {
    for (const photo of photos) {
      for (const name of fileNamesOf(photo)) {
        s.unref.run(name)
        s.drop.run(name)
      }
    }
  }
  return {
    add (photos, added) {
      if (photos.length >= MAX_PHOTOS) return 'photo-limit'
      for (const file of added.files) s.claim.run(file.name, file.bytes)
      return [...photos, added.photo]
    },
    remove (photos, photoId) {
      const gone = photos.find((p) => p.id === photoId)
      if (!gone) return 'photo-not-found'
      release([gone])
      return photos.filter((p) => p !== gone)
    },
    release
  }
}

/** The bytes of one file, read on the store's read connection. */
export function photoFileReader (db: Database.Database): (name: string) => Uint8Array | undefined {
  const get = db.prepare<[string], Buffer>('SELECT bytes FROM photo_files WHERE name = ?').pluck()
  return (name) => get.get(name)
}

/**
 * Photo URLs of plants whose file is not stored: always 0 in a committed database, since a photo
 * and its files commit together (the backup and the crash tests check it).
 */
export const DANGLING_PHOTO_FILES = `
SELECT count(*) FROM plants p, json_each(p.photos) ph,
  json_each(json_array(ph.value ->> '$.urls.thumb', ph.value ->> '$.urls.display', ph.value ->> '$.urls.full')) u
WHERE NOT EXISTS (SELECT 1 FROM photo_files f WHERE f.name = substr(u.value, ${'/v3/photos/'.length + 1}))`
