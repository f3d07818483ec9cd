import type { Told } from '../catalogue/restore-changes.js'

// What a catalogue has handed out, read from the one a restore replaces and applied to the restored
// copy, so that nothing handed out before the restore names something else after it:
// - ids continue after the highest the replaced catalogue gave (a plant created after the backup
//   keeps its id to itself: a client holding it gets 404);
// - the feed's floor is raised past its head, so every position handed out before is 410 (a
//   client reloads and follows from the new head, instead of an empty page that would make it skip
//   what comes next) and the changes the copy holds, all older than that, go;
// - every plant's version moves up by the highest version handed out, so no ETag "<id>.<version>"
//   a client holds matches any plant again (412) while ids and ETags keep their shape;
// - the API keys are the replaced catalogue's: a restore never brings back a revoked key, nor
//   drops one handed out since the backup;
// - the ledger's positions continue after the highest the replaced catalogue gave, so a movements
//   cursor a client holds never names another movement;
// - webhook receivers are told: what they may hold of the replaced catalogue (its plants' versions,
//   and what changed after the slowest webhook's place) is compared with the restored plants, and
//   each that differs is written into the feed as a change after the floor (catalogue/restore-changes.ts).
// Versions only grow by one a change, and every change takes a feed position, so a version is at
// most the feed's head: versionHigh is read anyway, from the rows, in case data came from elsewhere.

export interface RestoreKey {
  name: string
  scope: string
  hash: string
  /** Epoch milliseconds, as the SQLite store keeps them. */
  createdAt: number
  expiresAt: number | null
  lastUsedAt: number | null
  revokedAt: number | null
}

export interface RestoreMarks {
  /** The highest plant id handed out (deleted plants included). */
  lastId: number
  /** The newest feed position handed out. */
  feedHead: number
  /** At least every plant version handed out. */
  versionHigh: number
  keys: RestoreKey[]
  /** What webhook receivers may hold of the catalogue; absent from marks saved before it was kept. */
  told?: Told
  /** The highest ledger position handed out (a movements cursor); absent from marks saved before stock. */
  lastMovementSeq?: number
}

/** What applying the marks did, for the operator. */
export interface RestoreOutcome {
  plants: number
  /** Ids handed out from now on are above this. */
  lastId: number
  /** The feed's new floor and head: every position before it is 410. */
  feedFloor: number
  /** Added to every restored plant's version. */
  versionShift: number
  keys: number
  /** Changes written after the floor to tell webhook receivers what the restore undid; null when the marks hold no `told`. */
  told: number | null
}

/** The numbers of the marks, without the keys and what receivers were told. */
export type OwnMarks = Pick<RestoreMarks, 'lastId' | 'feedHead' | 'versionHigh'>

/** The marks a restore must move past: the replaced catalogue's and the copy's own, whichever is higher. */
export function combine (replaced: RestoreMarks, copy: OwnMarks): OwnMarks {
  return {
    lastId: Math.max(replaced.lastId, copy.lastId),
    feedHead: Math.max(replaced.feedHead, copy.feedHead),
    versionHigh: Math.max(replaced.versionHigh, copy.versionHigh)
  }
}

/** Checks a marks file read back (it may have been edited by hand). */
export function parseMarks (value: unknown): RestoreMarks {
  const m = value as Partial<RestoreMarks> | null
  const count = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0
  if (m === null || typeof m !== 'object' || !count(m.lastId) || !count(m.feedHead) || !count(m.versionHigh) || !Array.isArray(m.keys)) {
    throw new Error('not a marks file: it needs lastId, feedHead and versionHigh (whole numbers, 0 or more) and keys (a list)')
  }
  for (const k of m.keys as RestoreKey[]) {
    if (k === null || typeof k !== 'object' || typeof k.name !== 'string' || typeof k.scope !== 'string' || typeof k.hash !== 'string' || !count(k.createdAt)) {
      throw new Error('not a marks file: each key needs name, scope, hash and createdAt')
    }
  }
  if (m.lastMovementSeq !== undefined && !count(m.lastMovementSeq)) throw new Error('not a marks file: lastMovementSeq must be a whole number, 0 or more')
  if (m.told !== undefined) {
    const t = m.told as Partial<Told> | null
    const pair = (p: unknown): boolean => Array.isArray(p) && p.length === 2 && count(p[0]) && count(p[1])
    if (t === null || typeof t !== 'object' || !Array.isArray(t.plants) || !t.plants.every(pair) || !Array.isArray(t.unsure) || !t.unsure.every(count)) {
      throw new Error('not a marks file: told needs plants (a list of [id, version]) and unsure (a list of ids)')
    }
  }
  return m as RestoreMarks
}
