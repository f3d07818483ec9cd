import type { ChangeKind } from './changes.js'

// What a restore tells webhook receivers. A receiver applies what it is sent, in order, so it holds
// the replaced catalogue as of the last change it was sent. A restore takes the catalogue back,
// and the changes it undoes leave the feed; so each plant whose restored state may differ from what
// a receiver holds is sent again as a change of the restored catalogue, written into the feed
// after every position handed out before.

/** What receivers may hold of the catalogue a restore replaces (read with its restore marks). */
export interface Told {
  /** Every live plant as [id, version]: what a receiver that has every change holds. */
  plants: Array<[number, number]>
  /**
   * The plants changed after the place of the slowest webhook: its receiver holds one of their
   * versions since then, or none, and which one is not known, so each is sent whatever it is.
   */
  unsure: number[]
}

/** The changes a restore writes, in the order they are written: deletions first, then by id. */
export interface RestoreChanges {
  /** Plants receivers may hold that the restored catalogue does not have. */
  deleted: number[]
  /** Restored plants to send with their restored record. */
  sent: Array<{ id: number, kind: Exclude<ChangeKind, 'deleted'> }>
}

/**
 * Compares the restored catalogue's plants (`restored`: [id, version] before the restore moves the
 * versions up) with what receivers were told. Versions only grow and a restore moves every one past
 * all handed out before, so one plant's version names one state: the same version, the same record.
 * Deletions go first, so a receiver that keeps SKUs unique frees one before a restored plant takes it.
 */
export function restoreChanges (told: Told, restored: Iterable<[number, number]>): RestoreChanges {
  const held = new Map(told.plants)
  const unsure = new Set(told.unsure)
  const sent: RestoreChanges['sent'] = []
  const present = new Set<number>()
  for (const [id, version] of restored) {
    present.add(id)
    const heldVersion = held.get(id)
    if (heldVersion === version && !unsure.has(id)) continue
    sent.push({ id, kind: heldVersion === undefined ? 'created' : 'updated' })
  }
  const deleted = new Set<number>()
  for (const id of held.keys()) if (!present.has(id)) deleted.add(id)
  for (const id of unsure) if (!present.has(id)) deleted.add(id)
  sent.sort((a, b) => a.id - b.id)
  return { deleted: [...deleted].sort((a, b) => a - b), sent }
}
