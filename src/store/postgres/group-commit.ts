import type pg from 'pg'
import { stockRefusalOf, type StockCrossing } from '../../catalogue/stock.js'
import type { ChangeKind } from '../../catalogue/changes.js'
import { KIND_CODES, type FieldChanges, type HistoryKind } from '../../catalogue/history.js'
import { BatchRefused } from '../../catalogue/batch.js'
import {
  IdempotencyKeyReused, PhotoLimitReached, PhotoNotFound, PlantNotFound, SkuTaken, StorageUnavailable, TrashedNotFound, VersionMismatch, VersionNotKept
} from '../../catalogue/errors.js'
import type { Plant } from '../../catalogue/plant.js'
import type { Session } from './connection.js'
import { isRetryable, isUnavailable, storageError } from './storage-errors.js'
import { recordCommit } from '../commit-sizes.js'
import { needsTransaction, writeGroup, type Outcome, type WriteOp } from './group-writes.js'
import { KeyRaced, moveGroup, type MoveOp } from './move-group.js'

/** What a unit of work sees: its transaction's connection, and the outbox it appends to. */
export interface Tx {
  query: pg.PoolClient['query']
  /** A change for the feed, and the plant's history entry (`changes`: the fields it changed; `history`: its kind there, when not the feed's). */
  change (kind: ChangeKind, id: number, version: number, plant: Plant | null, at: number, actor: string, changes: FieldChanges, history?: HistoryKind, crossing?: StockCrossing): void
  /** Adds `delta` to the count of plants of `status`, written with the changes just before commit. */
  count (status: string, delta: number): void
  /** The work appended changes itself (a batch, through writeGroup): the feed's head is now `head`. */
  moved (head: number): void
}

interface Pending {
  /** A plant write, done set-based with the group's others (group-writes.ts) … */
  op?: WriteOp
  /** … or a stock movement, done set-based with the group's others (move-group.ts) … */
  move?: MoveOp
  /** … or a unit of work of its own statements (photos). */
  work?: (tx: Tx) => Promise<unknown>
  resolve: (value: any) => void
  reject: (error: unknown) => void
  timer: NodeJS.Timeout
  /** How long it may wait for its commit (deadlineMs, more for a batch). */
  budgetMs: number
  settled: boolean
}
interface PendingChange { kind: ChangeKind, id: number, version: number, plant: string | null, at: number, actor: string, history: string, code: number, crossing: string | null }

const ATTEMPTS = 3
/**
 * What each write of a batch beyond the first adds to its deadline, so a large batch waits longer
 * for its commit than a single write. A fixed deadline sized for one write turned most batches of
 * 100 into 503s on a loaded machine while PostgreSQL was answering, only slowly; the deadline is
 * there for a storage that does not answer.
 */
const PER_WRITE_MS = 10

// The sequence numbers are handed out by one row, meta.feed_head, updated just before COMMIT. Its
// row lock is held until the commit is visible, so transactions that write changes become visible
// in sequence order, on every instance: a reader that sees seq N sees everything below N. A
// BIGSERIAL would not do: two transactions can commit their values out of order, and a reader
// between the two commits would skip the lower one for ever. The lock serialises only the last
// statement and the commit, and this group commit puts many writes behind each acquisition.
// NOTIFY is sent in the same statement; PostgreSQL delivers it only if the transaction commits.
const APPEND_CHANGES = `
WITH head AS (
  UPDATE meta SET value = value + $1 WHERE key = 'feed_head' RETURNING value
), appended AS (
  INSERT INTO changes (seq, kind, plant_id, version, plant, at, actor, stock_events)
  SELECT head.value - $1 + c.n, c.kind, c.plant_id, c.version, c.plant, c.at, c.actor, c.stock_events
  FROM head, unnest($2::text[], $3::bigint[], $4::int[], $5::text[], $6::bigint[], $9::text[], $12::text[]) WITH ORDINALITY AS c (kind, plant_id, version, plant, at, actor, stock_events, n)
), recorded AS (
  INSERT INTO history (plant_id, at, version, kind, actor, changes)
  SELECT x.plant_id, x.at, x.version, x.code, x.actor, x.changes
  FROM unnest($3::bigint[], $4::int[], $6::bigint[], $9::text[], $10::text[], $11::smallint[]) AS x (plant_id, version, at, actor, changes, code)
), counted AS (
  -- After head (it joins it), so every writer takes feed_head's lock first and the count rows after it.
  UPDATE meta m SET value = m.value + d.delta
  FROM head, (SELECT 'count_' || k AS key, sum(v) AS delta FROM unnest($7::text[], $8::bigint[]) AS c (k, v) GROUP BY k) d
  WHERE m.key = d.key AND d.delta <> 0
)
SELECT value AS head, pg_notify('plant_changes', current_schema() || ':' || value) FROM head`

const isDomainError = (err: unknown): boolean =>
  err instanceof PlantNotFound || err instanceof VersionMismatch || err instanceof IdempotencyKeyReused || err instanceof SkuTaken ||
  err instanceof PhotoNotFound || err instanceof PhotoLimitReached || err instanceof BatchRefused || err instanceof TrashedNotFound ||
  err instanceof VersionNotKept || stockRefusalOf(err) !== undefined

/**
 * Group commit, as on SQLite: writes that arrive while a commit is in flight run together in the
 * next transaction and share its commit (and its turn on feed_head). No promise settles before the
 * commit holding its write is durable.
 *
 * A unit of work throws its domain errors (not found, version mismatch, key reused) before it writes,
 * so a refused request leaves nothing behind and the others in the group still commit. A deadlock
 * with another instance reruns the group; a data error reruns each write alone so only its owner fails.
 * Each request has its own deadline: past it the request gets StorageUnavailable and, if its turn
 * has not come yet, is never written.
 */
export class GroupCommit {
  private queue: Pending[] = []
  private running = false
  private scheduled = false
  private idle: Promise<void> = Promise.resolve()
  private markIdle: () => void = () => {}
  /** Units of work running beside the groups (runBeside), until each has settled. */
  private readonly beside = new Set<Promise<void>>()

  constructor (
    private readonly session: Session,
    private readonly deadlineMs: number,
    private readonly committed: (head: number) => void,
    private readonly clock: { now: () => number, idempotencyTtlMs: number }
  ) {}

  /** Queues a plant write (create, update, patch, delete): the group's are written together, set-based. */
  write<T> (op: WriteOp): Promise<T> {
    return this.enqueue({ op })
  }

  /** Queues a stock movement: the group's are checked in arrival order and written together, set-based. */
  move<T> (op: MoveOp): Promise<T> {
    return this.enqueue({ move: op })
  }

  /**
   * Queues a unit of work that issues its own statements (within the group's transaction for such
   * work). `writes` is how many plant writes it makes (a batch's operations): its deadline grows by
   * PER_WRITE_MS for each beyond the first, since a batch is that many writes, not one.
   */
  run<T> (work: (tx: Tx) => Promise<T>, writes = 1): Promise<T> {
    return this.enqueue({ work }, this.deadlineMs + Math.max(0, writes - 1) * PER_WRITE_MS)
  }

  /**
   * Runs a unit of work at once in a transaction of its own, beside the group in flight rather than
   * after it, with the same deadline, retries and settling as run(). The work orders itself: it
   * takes what it can before its turn (its row locks, its outcomes worked out) and waits for its
   * turn before anything that must follow the writes ahead of it (the SKUs it checks, the feed).
   * An import hands its next batch over this way while the one before it is written.
   */
  runBeside<T> (work: (tx: Tx) => Promise<T>, writes = 1): Promise<T> {
    const done = new Promise<T>((resolve, reject) => {
      const item = this.pending({ work }, resolve, reject, this.deadlineMs + Math.max(0, writes - 1) * PER_WRITE_MS)
      void this.attempt([item], (items) => this.runWorks(items))
    })
    const running = done.then(() => {}, () => {})
    this.beside.add(running)
    void running.then(() => this.beside.delete(running))
    return done
  }

  private pending (what: { op?: WriteOp, move?: MoveOp, work?: (tx: Tx) => Promise<unknown> }, resolve: (value: any) => void, reject: (error: unknown) => void, budgetMs: number): Pending {
    const item: Pending = { ...what, resolve, reject, settled: false, budgetMs, timer: undefined as unknown as NodeJS.Timeout }
    item.timer = setTimeout(() => {
      settle(item, { ok: false, error: new StorageUnavailable(`postgres: no commit within ${budgetMs} ms`) })
    }, budgetMs)
    return item
  }

  private enqueue<T> (what: { op?: WriteOp, move?: MoveOp, work?: (tx: Tx) => Promise<unknown> }, budgetMs = this.deadlineMs): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const item = this.pending(what, resolve, reject, budgetMs)
      this.queue.push(item)
      if (!this.running && !this.scheduled) {
        this.scheduled = true
        // Wait one turn of the event loop so writes arriving together share the first commit too.
        setImmediate(() => { this.scheduled = false; void this.flush() })
      }
    })
  }

  /** Resolves when everything queued so far (and run beside it) has been committed or refused. */
  async drain (): Promise<void> {
    if (this.queue.length > 0 && !this.running) void this.flush()
    await Promise.all([this.idle, ...this.beside])
  }

  private async flush (): Promise<void> {
    if (this.running) return
    this.running = true
    this.idle = new Promise((resolve) => { this.markIdle = resolve })
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.filter((p) => !p.settled)
        this.queue = []
        if (batch.length > 0) {
          recordCommit('postgres', batch.length)
          await this.commit(batch)
        }
      }
    } finally {
      this.running = false
      this.markIdle()
    }
  }

  /** Plant writes in one set-based transaction (or lone statement), movements in another; other work in a transaction of its own. */
  private async commit (batch: Pending[]): Promise<void> {
    const ops = batch.filter((p) => p.op !== undefined)
    const moves = batch.filter((p) => p.move !== undefined)
    const works = batch.filter((p) => p.work !== undefined)
    if (ops.length > 0) await this.attempt(ops, (items) => this.writeOps(items))
    if (moves.length > 0) await this.attempt(moves, (items) => this.writeMoves(items))
    if (works.length > 0) await this.attempt(works, (items) => this.runWorks(items))
  }

  /**
   * Runs `batch` and settles each item with its outcome. A deadlock or serialization failure reruns
   * it; another failure that is not the storage being away reruns each write alone, so only the
   * write PostgreSQL refuses fails.
   */
  private async attempt (batch: Pending[], run: (batch: Pending[]) => Promise<readonly [Outcome[], number | undefined]>, attempt = 1): Promise<void> {
    let outcomes: Outcome[]
    let head: number | undefined
    try {
      [outcomes, head] = await run(batch)
    } catch (err) {
      if (isRetryable(err) && attempt < ATTEMPTS) return this.attempt(batch.filter((p) => !p.settled), run, attempt + 1)
      if (!isUnavailable(err) && batch.length > 1) {
        for (const item of batch) if (!item.settled) await this.attempt([item], run)
        return
      }
      const error = storageError(err)
      for (const item of batch) settle(item, { ok: false, error })
      return
    }
    batch.forEach((item, i) => {
      if (outcomes[i]) settle(item, outcomes[i])
      // No outcome: the write waits for the next group (a SKU another write of this one moved).
      else if (!item.settled) this.queue.push(item)
    })
    if (head !== undefined) this.committed(head)
  }

  private writeOps (batch: Pending[]): Promise<[Outcome[], number | undefined]> {
    // Already answered (its deadline passed while it waited): do not write what nobody will be told about.
    const ops = batch.map((p) => p.settled ? undefined : p.op)
    const inTransaction = needsTransaction(ops)
    const write = (client: pg.PoolClient): Promise<[Outcome[], number | undefined]> =>
      writeGroup(client, ops, this.clock.now(), this.clock.idempotencyTtlMs, inTransaction)
    return inTransaction ? this.session.transaction(write, undefined, true) : this.session.run(write)
  }

  private writeMoves (batch: Pending[]): Promise<[Outcome[], number | undefined]> {
    // Already answered (its deadline passed while it waited): do not write what nobody will be told about.
    const moves = batch.map((p) => p.settled ? undefined : p.move)
    // moveGroup begins the transaction itself (with its first statement when it can: a round trip less).
    const write = (readKeys: boolean): Promise<[Outcome[], number | undefined]> =>
      this.session.transaction((client) => moveGroup(client, moves, this.clock.now(), this.clock.idempotencyTtlMs, { readKeys }), undefined, true)
    // A key used by another request (a retry, or another instance's): once more, the keys read first, where its answer is seen.
    return write(false).catch(async (err: unknown) => { if (err instanceof KeyRaced) return await write(true); throw err })
  }

  private runWorks (batch: Pending[]): Promise<readonly [Outcome[], number | undefined]> {
    const budgetMs = Math.max(...batch.map((p) => p.budgetMs))
    return this.session.transaction(async (client) => {
      const results: Outcome[] = []
      const changes: PendingChange[] = []
      const counts: Array<[string, number]> = []
      let moved: number | undefined
      const tx: Tx = {
        query: client.query.bind(client) as Tx['query'],
        change: (kind, id, version, plant, at, actor, fields, history = kind, crossing) => {
          changes.push({ kind, id, version, plant: plant && JSON.stringify(plant), at, actor, history: JSON.stringify(fields), code: KIND_CODES[history], crossing: crossing ? JSON.stringify(crossing) : null })
        },
        count: (status, delta) => { counts.push([status, delta]) },
        moved: (head) => { moved = Math.max(moved ?? 0, head) }
      }
      for (const item of batch) {
        // Already answered (its deadline passed while it waited): do not write what nobody will be told about.
        if (item.settled) { results.push(undefined); continue }
        const mark = changes.length
        const countMark = counts.length
        try {
          results.push({ ok: true, value: await item.work!(tx) })
        } catch (error) {
          if (!isDomainError(error)) throw error
          changes.length = mark
          counts.length = countMark
          results.push({ ok: false, error })
        }
      }
      if (changes.length === 0) return [results, moved] as const
      const { rows } = await client.query<{ head: number }>(APPEND_CHANGES, [
        changes.length,
        changes.map((c) => c.kind), changes.map((c) => c.id), changes.map((c) => c.version),
        changes.map((c) => c.plant), changes.map((c) => c.at),
        counts.map((c) => c[0]), counts.map((c) => c[1]),
        changes.map((c) => c.actor), changes.map((c) => c.history), changes.map((c) => c.code),
        changes.map((c) => c.crossing)
      ])
      return [results, rows[0].head] as const
    }, budgetMs)
  }
}

function settle (item: Pending, outcome: NonNullable<Outcome>): void {
  if (item.settled) return
  item.settled = true
  clearTimeout(item.timer)
  if (outcome.ok) item.resolve(outcome.value)
  else item.reject(outcome.error)
}
