import type pg from 'pg'
import { IdempotencyKeyReused, PlantNotFound, VersionMismatch } from '../../catalogue/errors.js'
import { movementEntry } from '../../catalogue/history.js'
import { toRecord, type PlantStatus, type StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import { applyMovement, LocationNotFound, MAIN_LOCATION, stockCrossings, type MovementInput, type MovementResult, type StockCrossing } from '../../catalogue/stock.js'
import { sameRequest, type IdempotencyClaim } from '../idempotency.js'
import { jsonParam } from './group-statement.js'
import { ANY_AGE, LEVELS, LOCK_MAIN, PREPARE, WRITE_AGAIN, WRITE_NEW } from './move-statements.js'
import { toPlant, type Outcome, type PlantRow } from './group-writes.js'

// The stock movements of one group commit, set-based as its plant writes are (group-writes.ts):
// whatever the number of movements, a group costs three round trips (four when a movement names a
// location other than main, or the group runs again): BEGIN and 1, 3, COMMIT.
//   1. One statement locks the group's plants (in id order, FOR UPDATE: a movement of the same
//      plant on any instance waits for this group's commit), shares its locations (FOR SHARE: a
//      location's delete waits), and reads the plants' levels. It goes with BEGIN in one simple
//      query when no text from a request is in it: the ids, and main as the only location. With
//      another location it is a statement of its own (parameters), and reads the keys' earlier uses.
//   2. Here, movement by movement in arrival order, each checked and applied (applyMovement)
//      against its plant and level as the movements before it in the group left them: two sales of
//      the last unit in one group, the first sells it and the second is refused. A refusal (not
//      found, version mismatch, unknown location, insufficient stock, a count's expected, a key
//      reused) touches nothing and no other movement. A key used earlier answers its first result.
//   3. One statement writes every applied movement: the plants' totals, status and version, the
//      levels, the ledger's rows (their positions drawn here, so a refused movement takes none),
//      the keys with their answers, the feed's changes with their stock events, the history, the
//      counts and the NOTIFY; then COMMIT.
// A key is written once, with its answer, in 3. 3 first looks for the group's keys: when one is in
// the table (a retry, another instance's request committed since 1, or an expired key's row), it
// applies nothing and draws no ledger position; the group is rolled back and runs again (KeyRaced)
// with the keys read in 1, where that request's answer is replayed (an expired row is taken over).
// A key whose request is in flight on another instance makes 3's insert wait for it and find the key
// taken: rolled back and run again alike, the only case (with PostgreSQL rolling a group back) that
// leaves ledger positions unused.
// The levels are read in the statement that locks the plants, so under the snapshot taken before a
// lock waited: a plant whose locked row is newer than the snapshot's (another instance's commit came
// in between) has its levels read again in a statement of its own. Every write of a live plant's
// levels (a movement, a reservation's step, untracking) writes its row too, so the version tells.

/** A movement as queued (StockStore.move). */
export interface MoveOp { id: number, input: MovementInput, idempotency?: IdempotencyClaim, expectedVersions?: number[], actor: string }

/** The connections (their clients) where LOCK_MAIN is prepared: marked once it was. */
const lockMainPrepared = new WeakSet<object>()

/** created_at is a BIGINT: pg hands it over as a string, json_agg as a number. */
interface Earlier { key: string, request_hash: string, response: string | null, created_at: number | string }
interface LevelRow { plant_id: number | string, location: string, on_hand: number | string, reserved: number | string }

/** The ledger position a movement's JSON is split at: what comes before it (ending `"seq":`) and after it. */
const SEQ_MARK = '"movement":{"seq":0'
function splitAtSeq (json: string): [string, string] {
  const at = json.indexOf(SEQ_MARK)
  if (at < 0) throw new TypeError('no movement position to fill in')
  return [json.slice(0, at + SEQ_MARK.length - 1), json.slice(at + SEQ_MARK.length)]
}

const placeKey = (id: number, location: string): string => `${id}\u0000${location}`

interface Applied {
  index: number
  op: MoveOp
  result: MovementResult
  record: string
  /** The history's changes; undefined for a count that changed nothing (no version, change or history entry). */
  changes: string | undefined
  crossing?: Omit<StockCrossing, 'movement'> & { movement: MovementResult['movement'] }
}

/**
 * Runs one group's movements on `client`, inside a transaction the caller commits: begun here (its
 * first statement), or by the caller with `begun`. Returns each movement's outcome (undefined where
 * `moves` has none) and the feed's new head, if it moved. A refusal is an outcome; anything
 * PostgreSQL refuses is thrown, and nothing is written. `readKeys`: the keys' earlier uses are read
 * with the locks even when every movement takes the main location (a group run again: KeyRaced).
 */
export async function moveGroup (client: Pick<pg.PoolClient, 'query'>, moves: Array<MoveOp | undefined>, now: number, idempotencyTtlMs: number,
  { begun = false, readKeys = false }: { begun?: boolean, readKeys?: boolean } = {}): Promise<[Outcome[], number | undefined]> {
  const outcomes: Outcome[] = moves.map(() => undefined)
  const ids = new Set<number>()
  const places = new Set<string>()
  const keyHashes = new Map<string, string>() // the first hash each key comes with
  for (const move of moves) {
    if (move === undefined) continue
    ids.add(move.id)
    places.add(move.input.location ?? MAIN_LOCATION)
    if (move.idempotency && !keyHashes.has(move.idempotency.key)) keyHashes.set(move.idempotency.key, move.idempotency.requestHash)
  }
  if (ids.size === 0) return [outcomes, undefined]
  const lockIds = [...ids].sort((a, b) => a - b)
  const keys = [...keyHashes.keys()].sort()
  const expiredBefore = now - idempotencyTtlMs

  // 1. Lock and read.
  type Prepared = { plants: Array<PlantRow & { seen: number | null }>, places: string[], levels: LevelRow[], earlier: Earlier[] }
  let r: Prepared
  const keysRead = begun || readKeys || places.size !== 1 || !places.has(MAIN_LOCATION)
  if (!keysRead) {
    // Nothing from a request in the text: BEGIN and the lock in one round trip (a PATCH group's three).
    if (!lockIds.every(Number.isSafeInteger)) throw new TypeError('plant ids must be integers')
    if (!lockMainPrepared.has(client)) {
      await client.query(LOCK_MAIN)
      lockMainPrepared.add(client)
    }
    const results = await client.query(`BEGIN; EXECUTE stock_move_lock ('{${lockIds.join(',')}}')`) as unknown as [unknown, pg.QueryResult<Prepared>]
    r = results[1].rows[0]
  } else {
    if (!begun) await client.query('BEGIN')
    r = (await client.query<Prepared>({ name: 'stock-move-prepare', text: PREPARE, values: [lockIds, keys, expiredBefore, [...places]] })).rows[0]
  }
  const current = new Map<number, StoredPlant>()
  const newer: number[] = []
  for (const row of r.plants) {
    current.set(Number(row.id), toPlant(row))
    if (row.seen === null || Number(row.seen) !== Number(row.version)) newer.push(Number(row.id))
  }
  const known = new Set(r.places)
  const levels = new Map<string, { onHand: number, reserved: number }>()
  const setLevels = (rows: LevelRow[]): void => {
    for (const l of rows) levels.set(placeKey(Number(l.plant_id), l.location), { onHand: Number(l.on_hand), reserved: Number(l.reserved) })
  }
  setLevels(r.levels)
  if (newer.length > 0) {
    for (const id of newer) for (const k of [...levels.keys()]) if (k.startsWith(`${id}\u0000`)) levels.delete(k)
    setLevels((await client.query<LevelRow>({ name: 'stock-move-levels', text: LEVELS, values: [newer] })).rows)
  }
  // The levels that exist: updated in 3, the others inserted.
  const held = new Set(levels.keys())
  const earlier = new Map(r.earlier.map((e) => [e.key, e]))

  // 2. Each movement in arrival order, against its plant and level as the ones before it left them.
  const applied: Applied[] = []
  const owner = new Map<string, Applied>() // the applied movement answering for each key it takes
  const replays: Array<{ index: number, of: Applied }> = []
  const counts = new Map<string, number>()
  const count = (key: string, delta: number): void => { counts.set(key, (counts.get(key) ?? 0) + delta) }
  const levelsWritten = new Map<string, { plant_id: number, location: string, on_hand: number, reserved: number, held: boolean }>()
  const at = timestamp(now)
  let unsure = false
  moves.forEach((move, index) => {
    if (move === undefined) return
    try {
      const { id, input, idempotency: claim, expectedVersions, actor } = move
      if (claim) {
        const first = owner.get(claim.key)
        if (first) {
          if (first.op.idempotency!.requestHash !== claim.requestHash) throw new IdempotencyKeyReused(now, now + idempotencyTtlMs)
          replays.push({ index, of: first })
          return
        }
        const before = earlier.get(claim.key)
        if (before) {
          const usedAt = Number(before.created_at)
          if (!sameRequest(before.request_hash, claim.requestHash) || before.response === null) throw new IdempotencyKeyReused(usedAt, usedAt + idempotencyTtlMs)
          outcomes[index] = { ok: true, value: { ...JSON.parse(before.response) as MovementResult, replayed: true } }
          return
        }
      }
      const plant = current.get(id)
      if (!plant) throw new PlantNotFound()
      if (expectedVersions && !expectedVersions.includes(plant.version)) throw new VersionMismatch()
      const location = input.location ?? MAIN_LOCATION
      if (!known.has(location)) throw new LocationNotFound(location)
      const place = placeKey(id, location)
      const moved = applyMovement(input, location, levels.get(place), plant.stock, plant.status as PlantStatus)
      // A count that finds the level as it is changes no plant (no version, change or history entry): the ledger keeps it.
      const after: StoredPlant = moved.changes ? { ...plant, stock: moved.stock, status: moved.status, version: plant.version + 1, updatedAt: at } : plant
      const result: MovementResult = {
        // seq: filled in when the ledger's row is written (its position drawn then).
        movement: { seq: 0, at, actor, location, delta: moved.delta, reason: input.reason, reference: input.reference ?? null, onHandAfter: moved.level.onHand },
        level: moved.level,
        stock: moved.stock,
        id,
        version: after.version,
        replayed: false
      }
      const events = stockCrossings(plant.stock, moved.stock, plant.lowStockAt)
      const done: Applied = {
        index,
        op: move,
        result,
        record: JSON.stringify(toRecord(after)),
        changes: moved.changes ? movementEntry(plant, after, input.reason, { location }) : undefined,
        crossing: events.length > 0 ? { events, movement: result.movement, level: result.level } : undefined
      }
      applied.push(done)
      if (claim) owner.set(claim.key, done)
      if (after.status !== plant.status) {
        count(plant.status, -1)
        count(after.status, 1)
      }
      count('units_on_hand', moved.delta)
      current.set(id, after)
      levels.set(place, { onHand: moved.level.onHand, reserved: moved.level.reserved })
      levelsWritten.set(place, { plant_id: id, location, on_hand: moved.level.onHand, reserved: moved.level.reserved, held: held.has(place) })
    } catch (error) {
      outcomes[index] = { ok: false, error }
      // A refused movement with a key may be a retry of one applied before (sold since, the plant
      // deleted, …), which is answered with its first result: known only with the keys read.
      if (!keysRead && move.idempotency) unsure = true
    }
  })
  if (unsure) throw new KeyRaced()
  if (applied.length === 0) return [outcomes, undefined]

  // 3. Every write in one statement.
  const touched = new Set(applied.filter((a) => a.changes !== undefined).map((a) => a.op.id))
  const plants = [...touched].map((id) => {
    const p = current.get(id)!
    return { id, on_hand: p.stock!.onHand, reserved: p.stock!.reserved, available: p.stock!.available, status: p.status, version: p.version }
  })
  let changed = 0
  const rows = applied.map((a, i) => {
    const m = a.result.movement
    const changeN = a.changes === undefined ? null : ++changed
    const [answerHead, answerTail] = a.op.idempotency ? splitAtSeq(JSON.stringify(a.result)) : [null, null]
    const [eventsHead, eventsTail] = a.crossing ? splitAtSeq(JSON.stringify(a.crossing)) : [null, null]
    return {
      n: i + 1,
      plant_id: a.op.id,
      actor: m.actor,
      location: m.location,
      delta: m.delta,
      reason: m.reason,
      reference: m.reference,
      on_hand_after: m.onHandAfter,
      version: a.result.version,
      change_n: changeN,
      plant: a.record,
      changes: a.changes,
      idem: a.op.idempotency?.key ?? null,
      hash: a.op.idempotency?.requestHash ?? null,
      answer_head: answerHead,
      answer_tail: answerTail,
      events_head: eventsHead,
      events_tail: eventsTail
    }
  })
  const firstRun = !begun && !readKeys
  const { rows: [written] } = await client.query<{ seqs: Array<number | string>, claimed: number | string, head: number }>({
    name: firstRun ? 'stock-move-write' : 'stock-move-write-again',
    text: firstRun ? WRITE_NEW : WRITE_AGAIN,
    values: [now, JSON.stringify(plants), jsonParam([...levelsWritten.values()]), jsonParam(rows), changed, firstRun ? ANY_AGE : expiredBefore,
      [...counts.keys()], [...counts.values()], [...owner.keys()]]
  }).catch((error: unknown) => {
    if (firstRun && isKeyTaken(error)) throw new KeyRaced()
    throw error
  })
  if (Number(written.claimed) !== owner.size) throw new KeyRaced()
  applied.forEach((a, i) => {
    a.result.movement.seq = Number(written.seqs[i])
    outcomes[a.index] = { ok: true, value: a.result }
  })
  for (const { index, of } of replays) outcomes[index] = { ok: true, value: { ...of.result, replayed: true } }
  return [outcomes, written.head]
}

const isKeyTaken = (error: unknown): boolean =>
  (error as { code?: string, constraint?: string }).code === '23505' && (error as { constraint?: string }).constraint === 'idempotency_keys_pkey'

/**
 * A key this group takes was used by a request its first statement did not read (a retry, or
 * another instance's request committed since), or a movement with a key was refused before the keys
 * were read: the group's writes are rolled back and it runs again with the keys read first, where
 * that request's answer is seen and replayed (GroupCommit.writeMoves).
 */
export class KeyRaced extends Error {}
