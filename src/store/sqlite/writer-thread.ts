import { parentPort, workerData } from 'node:worker_threads'
import { batchWriter, connect, type WriteOp } from './writes.js'

// The writer thread: it owns the write connection, so a commit's fsync blocks this thread
// only, and the event loop keeps reading requests (the next batch) while the disk flushes.

const { filename, idempotencyTtlMs } = workerData as { filename: string, idempotencyTtlMs: number }
const db = connect(filename)
const write = batchWriter(db, idempotencyTtlMs)

parentPort!.on('message', (message: WriteOp[] | 'close') => {
  if (message === 'close') {
    db.close()
    parentPort!.close()
    return
  }
  parentPort!.postMessage(write(message))
})
