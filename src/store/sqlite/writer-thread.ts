import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { parentPort, workerData } from 'node:worker_threads'
import { batchWriter, connect, type WriteOp } from './writes.js'

// The writer thread: it owns the write connection, so a commit's fsync blocks this thread
// only, and the event loop keeps reading requests (the next batch) while the disk flushes.

const { filename, idempotencyTtlMs } = workerData as { filename: string, idempotencyTtlMs: number }
const db = connect(filename)
// No memory map on this connection. Its pages mapped into the process and stayed counted in its
// RSS: with photos, the database grew by their files and the writer's map of it became a large
// share of the service's RSS beside uploaders. Its reads (the row a
// write changes, the index pages above it) come through SQLite's page cache instead, given 8 MB
// (a pread of a cached page costs a small part of what a write does).
db.pragma('mmap_size = 0')
db.pragma('cache_size = -8192')
const write = batchWriter(db, idempotencyTtlMs)

/**
 * A collection of this thread's heap, for after a batch that carried photo files. Their memory (a
 * few MB, moved or copied here) is outside V8's heap, and this thread makes almost no other
 * garbage: V8 collected them only once many of them had piled up. The heap is small, so a minor
 * collection is cheap, and on this thread, not the event loop's. `gc` comes from the flag set at
 * run time and a new context, which V8 gives the function.
 */
setFlagsFromString('--expose-gc')
const collect = runInNewContext('gc') as (options: { type: 'minor' | 'major' }) => void

parentPort!.on('message', (message: WriteOp[] | 'close') => {
  if (message === 'close') {
    db.close()
    parentPort!.close()
    return
  }
  parentPort!.postMessage(write(message))
  if (message.some((op) => op.kind === 'add-photo')) collect({ type: 'minor' })
})
