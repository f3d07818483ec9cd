import type Database from 'better-sqlite3'

interface Pending { work: () => unknown, resolve: (v: any) => void, reject: (e: unknown) => void }
type Outcome = { ok: true, value: unknown } | { ok: false, error: unknown }

/**
 * Group commit: writes that arrive in the same turn of the event loop run in one transaction
 * and share one fsync. No promise settles before the commit that holds its write is durable.
 *
 * A unit of work must throw its domain errors (not found, version mismatch) before it writes,
 * so a refused request leaves nothing behind; any other error aborts the whole group.
 */
export class GroupCommit {
  private queue: Pending[] = []
  private scheduled = false
  private readonly begin: Database.Statement
  private readonly commit: Database.Statement
  private readonly rollback: Database.Statement

  constructor (
    private readonly db: Database.Database,
    private readonly mapError: (err: unknown) => unknown,
    private readonly afterCommit: () => void
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE')
    this.commit = db.prepare('COMMIT')
    this.rollback = db.prepare('ROLLBACK')
  }

  run<T> (work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(this.flush)
      }
    })
  }

  /** Commits whatever is queued now (used on close). */
  async drain (): Promise<void> {
    if (this.queue.length > 0) this.flush()
  }

  private readonly flush = (): void => {
    this.scheduled = false
    const batch = this.queue
    this.queue = []
    if (batch.length === 0) return
    const outcomes: Outcome[] = []
    try {
      this.begin.run()
      for (const item of batch) {
        try {
          outcomes.push({ ok: true, value: item.work() })
        } catch (error) {
          if ((error as { code?: unknown }).code !== undefined) throw error // a storage error: abort the group
          outcomes.push({ ok: false, error })
        }
      }
      this.commit.run()
    } catch (err) {
      if (this.db.inTransaction) {
        try { this.rollback.run() } catch { /* the connection is already out of the transaction */ }
      }
      const error = this.mapError(err)
      for (const item of batch) item.reject(error)
      return
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i]
      if (outcome.ok) item.resolve(outcome.value)
      else item.reject(outcome.error)
    })
    if (outcomes.some((o) => o.ok)) this.afterCommit()
  }
}
