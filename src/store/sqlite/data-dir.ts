import { closeSync, mkdirSync, openSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

const HEADER = 'SQLite format 3\0'

export class DataDirError extends Error {}

const reason = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? String(err)

/**
 * Checks the data folder before SQLite opens it, so a bad DATA_DIR stops start-up at once with the
 * path and the reason. SQLite's own "unable to open database file" names neither, and a recursive
 * mkdir under /proc never returns. The folder itself is created; its parent must exist (a typo
 * should not grow a tree of folders).
 */
export function prepareDataDir (dataDir: string): string {
  const dir = resolve(dataDir)
  const fail = (why: string): never => { throw new DataDirError(`DATA_DIR ${dir}: ${why}`) }
  const stat = statSync(dir, { throwIfNoEntry: false })
  if (stat === undefined) {
    const parent = dirname(dir)
    if (!statSync(parent, { throwIfNoEntry: false })?.isDirectory()) fail(`its parent folder ${parent} does not exist`)
    try { mkdirSync(dir) } catch (err) { fail(`the folder cannot be created (${reason(err)})`) }
  } else if (!stat.isDirectory()) {
    fail('is not a folder')
  }
  // Writable for real (permissions, a read-only mount, a pseudo file system such as /proc).
  const probe = join(dir, `.write-check-${process.pid}`)
  try {
    writeFileSync(probe, '')
    rmSync(probe)
  } catch (err) {
    fail(`the folder is not writable (${reason(err)})`)
  }
  const file = join(dir, 'catalogue.db')
  const existing = statSync(file, { throwIfNoEntry: false })
  if (existing !== undefined) {
    if (!existing.isFile()) fail('catalogue.db is not a file')
    if (existing.size > 0) {
      const header = Buffer.alloc(HEADER.length)
      let fd: number | undefined
      try {
        fd = openSync(file, 'r+')
        readSync(fd, header, 0, header.length, 0)
      } catch (err) {
        fail(`catalogue.db cannot be opened for writing (${reason(err)})`)
      } finally {
        if (fd !== undefined) closeSync(fd)
      }
      if (header.toString('latin1') !== HEADER) fail('catalogue.db is not an SQLite database')
    }
  }
  return file
}
