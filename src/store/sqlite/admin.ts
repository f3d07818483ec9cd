import { existsSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { AdminRefused, type BackupCheck, type CatalogueSnapshot, type FolderAdmin, type RestoreOptions, type RestoreResult } from '../admin-store.js'
import type { RestoreMarks } from '../restore-marks.js'
import { backupTo, checkBackup, restoreFrom } from './backup.js'
import { readMarks } from './restore-marks.js'
import { SqliteSnapshot } from './snapshot.js'

// The admin part of the store (admin-store.ts) on a data folder's embedded database, read and
// written without the store's threads: the service may be running (snapshots, backups) or must be
// stopped (restore, which locks the file to be sure).

export class SqliteAdmin implements FolderAdmin {
  readonly kind = 'folder'
  readonly where: string
  readonly file: string

  constructor (readonly address: string) {
    this.where = `data folder ${address}`
    this.file = join(address, 'catalogue.db')
  }

  async hasCatalogue (): Promise<boolean> {
    return existsSync(this.file)
  }

  async requireCatalogue (): Promise<void> {
    this.refuseMissing()
  }

  private refuseMissing (): void {
    if (!existsSync(this.file)) throw new AdminRefused(`no catalogue in ${this.address} (${this.file} does not exist)`)
  }

  async snapshot (): Promise<CatalogueSnapshot> {
    this.refuseMissing()
    return new SqliteSnapshot(this.file)
  }

  async readMarks (): Promise<RestoreMarks> {
    this.refuseMissing()
    const db = new Database(this.file, { readonly: true, fileMustExist: true })
    try { return readMarks(db) } finally { db.close() }
  }

  readonly backup = async (file: string): Promise<BackupCheck> => {
    this.refuseMissing()
    return backupTo(this.file, file)
  }

  readonly checkBackup = async (file: string): Promise<BackupCheck> => checkBackup(file, this.file)

  readonly restore = async (backup: string, { marks, progress }: RestoreOptions): Promise<RestoreResult> =>
    restoreFrom(this.file, backup, marks, progress)

  async close (): Promise<void> {}
}
