import type Database from 'better-sqlite3'
import { crossingOfChange, recordOfChange, type Change, type FeedRead } from '../../catalogue/changes.js'
import { FeedGone, QueryTooSlow } from '../../catalogue/errors.js'
import type { HistoryEntry } from '../../catalogue/history.js'
import type { StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import type { TrashedPlant, TrashPosition } from '../../catalogue/trash.js'
import type { CountFilter, ListFilter } from '../plant-store.js'
import { historyReader } from './history.js'
import { countSql, listSql, mergePages, pendingSql, searchesIndex, searchFunctions, type Driver } from './list-query.js'
import { chooseDriver, countDriver, fallbackDriver, PLAN_LIMITS, type PlanLimits } from './list-plan.js'
import { tupleToPlant, type PlantTuple } from './plant-rows.js'
import { INDEXED_UP_TO } from './search-backlog.js'
import { boundsReader } from './category-name-bounds.js'
import { trashReader } from './trash.js'

// The reads that can cost more than a point lookup: lists, counts, feed pages, history and trash
// pages. On a file they run in the reader threads (reader-pool.ts), each on a read-only
// connection of its own; on a private in-memory database, on the event loop (nothing else can
// open it). Each call runs inside whatever read transaction its caller holds.

export interface ReadOptions {
  /** The longest one read may run before it is stopped (QueryTooSlow). */
  queryTimeoutMs: number
  /** How many names one search may reject as false matches (list-query.ts REJECT_BUDGET). */
  searchRejectBudget?: number
  /** The plan's thresholds (default PLAN_LIMITS). */
  plan?: PlanLimits
  /** Told the driver each list ended with (tests see a walk give up here), and each count's. */
  onPlan?: (driver: Driver) => void
}

export interface Reads {
  list (filter: ListFilter): StoredPlant[]
  count (filter: CountFilter, cap: number): number
  /** Changes after `after` (FeedGone when it is before the floor or beyond the head this snapshot sees). */
  changes (after: number, limit: number): FeedRead
  history (id: number, before: number | undefined, limit: number): HistoryEntry[] | undefined
  trash (after: TrashPosition | undefined, limit: number): TrashedPlant[]
}

/** The read operations a reader thread runs by name. */
export type ReadName = keyof Reads

/** The last change handed out; once all have expired, the floor is the last one there was. */
export const HEAD_SQL = "SELECT max(coalesce((SELECT max(seq) FROM changes), 0), (SELECT value FROM meta WHERE key = 'feed_floor'))"

/** The guard looks at the clock once in this many rows plus one (a mask): reading it costs more than a row. */
const GUARD_EVERY = 255

/** A walk of the sort's index read its row budget without filling the page (list-plan.ts WALK_BUDGET). */
class WalkTooLong extends Error {}

interface ChangeRow { seq: number, kind: Change['kind'], plant_id: number, version: number, actor: string, at: number, plant: string | null, stock_events: string | null }

export function sqliteReads (db: Database.Database, options: ReadOptions): Reads {
  const queries = new Map<string, Database.Statement>()
  const statement = (text: string): Database.Statement => {
    let s = queries.get(text)
    if (!s) {
      s = db.prepare(text)
      if (s.reader && !text.startsWith('SELECT count(')) s.raw(true)
      queries.set(text, s)
    }
    return s
  }
  // better-sqlite3 is synchronous and has no progress handler: this function, called by every list
  // query once per candidate row, is the progress handler that stops a query past its time limit.
  let deadline = Infinity
  let guardCalls = 0
  /** Rows the running walk may still read before it gives up (WalkTooLong). */
  let rowsLeft = Infinity
  db.function('query_guard', { deterministic: false }, (_id: unknown) => {
    if (--rowsLeft < 0) throw new WalkTooLong()
    if ((++guardCalls & GUARD_EVERY) === 0 && performance.now() > deadline) {
      throw new QueryTooSlow(`the query ran past its time limit of ${options.queryTimeoutMs} ms`)
    }
    return 1
  })
  /** Runs a walk that gives up after `budget` rows. */
  const budgeted = <T>(budget: number, fn: () => T): T => {
    rowsLeft = budget
    try {
      return fn()
    } finally {
      rowsLeft = Infinity
    }
  }
  const search = searchFunctions(db, options.searchRejectBudget)
  const backlog = db.prepare<[], number>(`SELECT EXISTS (SELECT 1 FROM changes WHERE seq > ${INDEXED_UP_TO} AND index_add IS NOT NULL)`).pluck()
  const floor = db.prepare<[], number>("SELECT value FROM meta WHERE key = 'feed_floor'").pluck()
  const head = db.prepare<[], number>(HEAD_SQL).pluck()
  const changeRows = db.prepare<[number, number], ChangeRow>('SELECT seq, kind, plant_id, version, actor, at, plant, stock_events FROM changes WHERE seq > ? ORDER BY seq LIMIT ?')
  const probe = (text: string, args: unknown[]): number => statement(text).pluck().get(...args) as number
  // The catalogue's size, about (deleted plants' ids count): one step down the table's tree.
  const plants = db.prepare<[], number | null>('SELECT max(id) FROM plants').pluck()
  const plan = options.plan ?? PLAN_LIMITS
  const categoryBounds = boundsReader(db)

  const bounded = <T>(fn: () => T): T => {
    deadline = performance.now() + options.queryTimeoutMs
    search.reset()
    try {
      return fn()
    } finally {
      deadline = Infinity
    }
  }

  return {
    list: (filter) => bounded(() => {
      const run = ({ text, args }: { text: string, args: unknown[] }): PlantTuple[] => statement(text).all(...args) as PlantTuple[]
      const byName = filter.sort === 'name' || filter.sort === '-name'
      const bounds = byName && filter.category !== undefined ? categoryBounds(filter.category) : undefined
      let driver = chooseDriver(filter, probe, plan)
      let rows: PlantTuple[]
      try {
        // A walk of the sort's index bets that matches come soon; past its row budget it lost.
        if (driver.kind === 'order') {
          search.reset(false)
          rows = budgeted(plan.walkBudget, () => run(listSql(filter, driver, bounds)))
        } else {
          rows = run(listSql(filter, driver, bounds))
        }
      } catch (err) {
        if (!(err instanceof WalkTooLong)) throw err
        search.reset()
        driver = fallbackDriver(filter, probe, plants.get() ?? 0, plan)
        rows = run(listSql(filter, driver, bounds))
      }
      if (searchesIndex(driver) && backlog.get() === 1) rows = mergePages(rows, run(pendingSql(filter)), filter) as PlantTuple[]
      options.onPlan?.(driver)
      return rows.map(tupleToPlant)
    }),
    count: (filter, cap) => bounded(() => {
      const driver = countDriver({ ...filter, afterId: 0, limit: cap }, probe, plan)
      options.onPlan?.(driver)
      const { text, args } = countSql(filter, driver, cap, driver.kind === 'fts' && backlog.get() === 1)
      return Math.min(cap, statement(text).pluck().get(...args) as number)
    }),
    changes: (after, limit) => {
      if (after < floor.get()!) throw new FeedGone('expired')
      if (after > head.get()!) throw new FeedGone('ahead')
      const rows = changeRows.all(after, limit)
      const items = rows.map((r): Change =>
        ({ seq: r.seq, kind: r.kind, id: r.plant_id, version: r.version, actor: r.actor, at: timestamp(r.at), plant: recordOfChange(r.plant, r.version) }))
      return { items, next: items.length > 0 ? items[items.length - 1].seq : after, crossings: rows.flatMap((r) => crossingOfChange(r.seq, r.stock_events)) }
    },
    history: historyReader(db),
    trash: trashReader(db)
  }
}
