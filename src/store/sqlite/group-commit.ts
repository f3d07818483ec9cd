import type { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import { IdempotencyKeyReused, PlantNotFound, SkuTaken, TrashedNotFound, VersionMismatch, VersionNotKept } from '../../catalogue/errors.js'
import { BatchRefused } from '../../catalogue/batch.js'
import { stockErrorOf, type StockRefusal } from '../../catalogue/stock.js'
import { PHOTO_REFUSALS } from '../../catalogue/photo.js'
import { batchWriter, type GroupResult, type IndexedRefusal, type KeyUse, type Refusal, type WriteOp } from './writes.js'
import { recordCommit } from '../commit-sizes.js'
import { isWebhookWrite } from './webhook-writes.js'
import { startThread } from './threads.js'

/** Runs a batch of writes in one transaction and says how each went. */
export interface Committer {
  commit (batch: WriteOp[]): Promise<GroupResult>
  close (): Promise<void>
}

/** A write waiting for its commit; `feed`: it is a change of the feed (not the webhook deliverer's own). */
interface Pending { op: WriteOp | undefined, feed: boolean, resolve: (v: any) => void, reject: (e: unknown) => void }
export interface Failure { code?: string, message: string }

const REFUSALS: Record<Exclude<Refusal, 'sku-taken' | 'batch' | 'idempotency-key-reused' | 'stock'>, new () => Error> = {
  'not-found': PlantNotFound,
  'trashed-not-found': TrashedNotFound,
  'version-mismatch': VersionMismatch,
  'version-not-kept': VersionNotKept,
  ...PHOTO_REFUSALS
}
const refused = ({ refusal, sku, holder, refusals, key, stock }: Omit<IndexedRefusal, 'index'> & { refusals?: IndexedRefusal[], key?: KeyUse, stock?: StockRefusal }): Error =>
  refusal === 'stock'
    ? stockErrorOf(stock!)
    : refusal === 'batch'
      ? new BatchRefused(refusals!.map((r) => ({ index: r.index, error: refused(r) })))
      : refusal === 'sku-taken'
        ? new SkuTaken(sku!, holder!)
        : refusal === 'idempotency-key-reused' ? new IdempotencyKeyReused(key!.usedAt, key!.keptUntil) : new REFUSALS[refusal]()

/**
 * Group commit: writes that arrive while the previous commit is being flushed, or in the same
 * turn of the event loop, run in one transaction and share one fsync. No promise settles before
 * the commit that holds its write is durable. One batch is in flight at a time.
 */
export class GroupCommit {
  private queue: Pending[] = []
  private scheduled = false
  private inFlight: Promise<void> | undefined

  constructor (
    private readonly committer: Committer,
    private readonly mapFailure: (failure: Failure) => unknown,
    /** After a commit; `changed`: it holds a change of the feed (not only the webhook deliverer's own writes). */
    private readonly afterCommit: (changed: boolean) => void
  ) {}

  run<T> (op: WriteOp): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, feed: !isWebhookWrite(op), resolve, reject })
      this.schedule()
    })
  }

  /** Commits whatever is queued or in flight (used on close). */
  async drain (): Promise<void> {
    while (this.inFlight || this.queue.length > 0) {
      if (!this.inFlight) this.flush()
      await this.inFlight
    }
  }

  private schedule (): void {
    if (this.scheduled || this.inFlight) return
    this.scheduled = true
    setImmediate(this.flush)
  }

  private readonly flush = (): void => {
    this.scheduled = false
    if (this.inFlight || this.queue.length === 0) return
    const batch = this.queue
    this.queue = []
    recordCommit('sqlite', batch.length)
    const committed = this.committer.commit(batch.map((p) => p.op!))
    // The committer has what it needs (the writer thread its copy: postMessage copies at once), so
    // the writes are let go here rather than kept until their commit lands. A 500-plant batch kept
    // through its write was copied by each scavenge of the event loop's heap and then promoted: the
    // scavenges that held the loop beside POSTs (bench/results/issue-27-import-batches.md).
    for (const p of batch) p.op = undefined
    this.inFlight = committed
      .catch((err: Error & { code?: string }): GroupResult => ({ failure: { code: err.code, message: err.message } }))
      .then((result) => {
        this.inFlight = undefined
        if (this.queue.length > 0) this.schedule()
        this.settle(batch, result)
      })
  }

  private settle (batch: Pending[], result: GroupResult): void {
    if ('failure' in result) {
      const error = this.mapFailure(result.failure)
      for (const p of batch) p.reject(error)
      return
    }
    result.outcomes.forEach((outcome, i) => {
      if (outcome.ok) batch[i].resolve(outcome.value)
      else batch[i].reject(refused(outcome))
    })
    if (result.outcomes.some((o) => o.ok)) this.afterCommit(result.outcomes.some((o, i) => o.ok && batch[i].feed))
  }
}

/** Commits in the calling thread: for a private in-memory database, which no other thread can open. */
export function inThreadCommitter (db: Database.Database, idempotencyTtlMs: number): Committer {
  const write = batchWriter(db, idempotencyTtlMs)
  return { commit: async (batch) => write(batch), close: async () => {} }
}

/**
 * The memory of a batch's photo files, moved to the writer thread rather than copied where the
 * photo says its files' memory is its own (`movable`): a copy of a phone picture's files held the
 * event loop long enough to land in the p99 of the reads served beside uploads.
 * A moved buffer reads as empty here afterwards.
 */
function movedFiles (batch: WriteOp[]): ArrayBuffer[] {
  const moved = new Set<ArrayBuffer>()
  for (const op of batch) {
    if (op.kind !== 'add-photo' || !op.photo.movable) continue
    for (const { bytes } of op.photo.files) {
      if (bytes.buffer instanceof ArrayBuffer) moved.add(bytes.buffer)
    }
  }
  return [...moved]
}

/**
 * Commits in a writer thread with its own connection to the file, so the event loop is never
 * blocked on fsync. A thread that dies fails its batch and is replaced on the next one.
 */
export function writerThreadCommitter (filename: string, idempotencyTtlMs: number): Committer {
  let worker: Worker | undefined
  let pending: { resolve: (r: GroupResult) => void, reject: (e: unknown) => void } | undefined
  const settle = (): typeof pending => {
    const p = pending
    pending = undefined
    worker?.unref()
    return p
  }
  const start = (): Worker => {
    const w = startThread('writer-thread', { filename, idempotencyTtlMs })
    // Idle, the thread does not keep the process alive; with a batch in flight it does.
    w.unref()
    w.on('message', (result: GroupResult) => settle()?.resolve(result))
    w.on('error', (err) => settle()?.reject(err))
    w.on('exit', () => {
      if (worker === w) worker = undefined
      settle()?.reject(Object.assign(new Error('the SQLite writer thread stopped'), { code: 'SQLITE_IOERR_WRITER_EXIT' }))
    })
    return w
  }
  // Started by the first write, not at open: a thread of its own (an isolate, its modules, a
  // connection) took about a fifth of the CPU of a cold start, on the core the start-up needs.
  return {
    commit: (batch) => new Promise<GroupResult>((resolve, reject) => {
      pending = { resolve, reject }
      worker ??= start()
      worker.ref()
      worker.postMessage(batch, movedFiles(batch))
    }),
    close: async () => {
      const w = worker
      if (!w) return
      worker = undefined
      const exited = new Promise((resolve) => w.once('exit', resolve))
      w.ref()
      w.postMessage('close')
      await exited
    }
  }
}
