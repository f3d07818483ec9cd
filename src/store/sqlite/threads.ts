import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'

// Run from source (tests, tools under tsx), a thread's module is the .ts file next to this one,
// loaded through tsx's require hook, which compiles in the thread itself. Its import hook (the
// --import tsx a worker inherits) starts a loader thread of its own for every thread: three times
// the CPU, and the tests open a store, so a writer thread, hundreds of times. Built, each thread is
// a file of its own beside the module that starts it (scripts/build.mjs names them).
const FROM_SOURCE = import.meta.url.endsWith('.ts')

/** Starts the thread `name` (`writer-thread`, `reader-thread`) of this folder. */
export function startThread (name: string, workerData: unknown): Worker {
  const file = new URL(`./${name}${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url)
  return FROM_SOURCE
    ? new Worker(`require('tsx/cjs/api').register(); require(${JSON.stringify(fileURLToPath(file))})`, { eval: true, workerData, execArgv: [] })
    : new Worker(file, { workerData })
}
