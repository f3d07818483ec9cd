import Database from 'better-sqlite3'
import { readlinkSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import { FeedGone } from '../../catalogue/errors.js'
import { sqliteReads, type ReadName, type ReadOptions } from './reads.js'
import { MMAP_BYTES } from './writes.js'

// A reader thread: the expensive reads (reads.ts) on a read-only connection of its own, so a long
// list holds this thread, never the event loop. WAL lets it read beside the writer; each read is
// one transaction, so what it returns is one snapshot.

export interface ReadRequest { id: number, name: ReadName, args: unknown[] }
export type ReadReply = { id: number, value: unknown } | { id: number, error: ReadFailure }
/** An error as it crosses the thread: its class by name, and what the store needs of it. */
export interface ReadFailure { name: string, message: string, code?: string, reason?: string }

/**
 * How much lower this thread runs than the rest of the process (its nice value, added): beside a
 * busy reader the event loop and the writer thread are scheduled first, so a request by id or a
 * write waits for a core no longer than it would on an idle machine; an idle core is still the
 * reader's. On the same core as readers looping at nice 0, a write's median was several times its
 * quiet one.
 */
const NICER = 10

/** Linux's id of this thread (/proc/thread-self is PID/task/TID): setpriority on it sets this thread's alone. */
function lowerPriority (): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    setPriority(tid, Math.min(19, getPriority(tid) + NICER))
  } catch {
    // Not Linux, or not allowed: the reader runs at the process's priority.
  }
}

lowerPriority()
const { filename, ...options } = workerData as ReadOptions & { filename: string }
const db = new Database(filename, { readonly: true, fileMustExist: true })
db.pragma('busy_timeout = 5000')
db.pragma(`mmap_size = ${MMAP_BYTES}`)
const reads = sqliteReads(db, options)
const begin = db.prepare('BEGIN')
const commit = db.prepare('COMMIT')

function failure (err: unknown): ReadFailure {
  const e = err as Error & { code?: unknown }
  return {
    name: e?.constructor?.name ?? 'Error',
    message: String(e?.message ?? err),
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    ...(err instanceof FeedGone ? { reason: err.reason } : {})
  }
}

parentPort!.on('message', (message: ReadRequest | 'close') => {
  if (message === 'close') {
    db.close()
    parentPort!.close()
    return
  }
  const { id, name, args } = message
  let reply: ReadReply
  try {
    begin.run()
    try {
      reply = { id, value: (reads[name] as (...a: unknown[]) => unknown)(...args) }
    } finally {
      commit.run()
    }
  } catch (err) {
    reply = { id, error: failure(err) }
  }
  parentPort!.postMessage(reply)
})
