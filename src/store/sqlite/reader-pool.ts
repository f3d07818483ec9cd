import { performance } from 'node:perf_hooks'
import type { Worker } from 'node:worker_threads'
import { FeedGone, HistoryCursorGone, QueryTooSlow } from '../../catalogue/errors.js'
import type { ReadFailure, ReadReply, ReadRequest } from './reader-thread.js'
import type { ReadName, ReadOptions, Reads } from './reads.js'
import { startThread } from './threads.js'

// The reader threads of a store on a file: expensive reads wait here in arrival order and each goes
// to the first thread free. Threads start with the first reads that need them (a thread of its own
// costs a cold start CPU it does not need), and an idle thread does not keep the process alive.

interface Task {
  request: ReadRequest
  resolve: (value: unknown) => void
  reject: (err: unknown) => void
  /** When it was asked, then how long it waited for a thread: a refusal says where its time went. */
  askedAt: number
  waitedMs?: number
}
interface Reader { worker: Worker, task: Task | undefined }

/** The error a read failed with, as its class on this side of the thread. */
function rebuild ({ name, message, code, reason }: ReadFailure, waitedMs: number | undefined): Error {
  if (name === 'QueryTooSlow') return new QueryTooSlow(message, waitedMs)
  if (name === 'FeedGone') return new FeedGone(reason as 'expired' | 'ahead')
  if (name === 'HistoryCursorGone') return new HistoryCursorGone(message)
  return Object.assign(new Error(message), code === undefined ? {} : { code })
}

export class ReaderPool {
  private readonly readers: Reader[] = []
  private readonly queue: Task[] = []
  private nextId = 1
  private closing: Promise<void> | undefined
  private idle: (() => void) | undefined

  constructor (private readonly filename: string, private readonly size: number, private readonly options: ReadOptions) {}

  /** Reads waiting for a thread, and reads running. */
  get load (): { waiting: number, running: number } {
    return { waiting: this.queue.length, running: this.readers.filter((r) => r.task !== undefined).length }
  }

  run<K extends ReadName> (name: K, ...args: Parameters<Reads[K]>): Promise<ReturnType<Reads[K]>> {
    if (this.closing) return Promise.reject(Object.assign(new Error('the store is closing'), { code: 'SQLITE_IOERR_CLOSING' }))
    return new Promise((resolve, reject) => {
      this.queue.push({ request: { id: this.nextId++, name, args }, resolve: resolve as (value: unknown) => void, reject, askedAt: performance.now() })
      this.dispatch()
    })
  }

  /** Finishes every read taken (in flight and waiting), then stops the threads. */
  async close (): Promise<void> {
    this.closing ??= (async () => {
      if (this.queue.length > 0 || this.readers.some((r) => r.task)) await new Promise<void>((resolve) => { this.idle = resolve })
      await Promise.all(this.readers.splice(0).map(async ({ worker }) => {
        const exited = new Promise((resolve) => worker.once('exit', resolve))
        worker.ref()
        worker.postMessage('close')
        await exited
      }))
    })()
    return await this.closing
  }

  private dispatch (): void {
    while (this.queue.length > 0) {
      const reader = this.readers.find((r) => r.task === undefined) ?? (this.readers.length < this.size ? this.start() : undefined)
      if (!reader) return
      const task = this.queue.shift()!
      task.waitedMs = Math.round(performance.now() - task.askedAt)
      reader.task = task
      reader.worker.ref()
      reader.worker.postMessage(task.request)
    }
    if (this.readers.every((r) => r.task === undefined)) this.idle?.()
  }

  private start (): Reader {
    const reader: Reader = { worker: startThread('reader-thread', { filename: this.filename, ...this.options }), task: undefined }
    const settle = (): Task | undefined => {
      const task = reader.task
      reader.task = undefined
      reader.worker.unref()
      return task
    }
    reader.worker.unref()
    reader.worker.on('message', (reply: ReadReply) => {
      const task = settle()
      if ('error' in reply) task?.reject(rebuild(reply.error, task.waitedMs))
      else task?.resolve(reply.value)
      this.dispatch()
    })
    reader.worker.on('error', (err) => { settle()?.reject(err) })
    reader.worker.on('exit', () => {
      const at = this.readers.indexOf(reader)
      if (at >= 0) this.readers.splice(at, 1)
      settle()?.reject(Object.assign(new Error('an SQLite reader thread stopped'), { code: 'SQLITE_IOERR_READER_EXIT' }))
      this.dispatch()
    })
    this.readers.push(reader)
    return reader
  }
}
