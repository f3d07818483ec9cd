import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { Socket } from 'node:net'
import { setPriority } from 'node:os'
import { HttpProblem } from '../http/problems/problem.js'
import { ByteReader } from './byte-reader.js'
import { processImage } from './images.js'
import { PICTURES_FD, FILES_FD, type ImageAnswer, type ImageJob } from './image-worker.js'

// The image worker: a child process of the service (src/photos/image-worker.ts starts it) that
// turns uploads into their three files. Its only argument is its scheduling priority (a nice value),
// used where the idle scheduling class cannot be had.

const nice = Number(process.argv[2] ?? 0)

/**
 * Puts every thread of this process in Linux's idle scheduling class (SCHED_IDLE), which any
 * process may enter: it runs only on cycles no ordinary thread wants, and an ordinary thread that
 * wakes takes the core from it at once. At nice 10 the event loop still waited for the worker's
 * slices: GET p99 beside uploaders was several times its value alone. Threads started later (libuv's
 * pool, libvips') inherit the class from the thread that starts them. Node cannot set a policy
 * itself; util-linux's chrt (in every Linux base system) does. Without it, the nice value remains.
 */
function idleClass (): boolean {
  try {
    execFileSync('chrt', ['--idle', '--all-tasks', '--pid', '0', String(process.pid)], { stdio: 'ignore', timeout: 5000 })
    return true
  } catch {
    return false
  }
}

/**
 * Lowers the priority of every thread of this process. On Linux a nice value belongs to a thread,
 * and a thread starts with its creator's: libuv's pool and libvips' threads, created later by
 * threads already lowered, inherit it; threads node started before this code ran are lowered here.
 */
function lowerPriority (): boolean {
  try { setPriority(nice) } catch { return false }
  let threads: string[] = []
  try { threads = readdirSync('/proc/self/task') } catch { /* not Linux: the call above did it for the process */ }
  for (const tid of threads) {
    try { setPriority(Number(tid), nice) } catch { /* exited */ }
  }
  return true
}
const niced = lowerPriority()
const idle = idleClass()
if (!idle && !niced) {
  // Said once, in the service's log format: pictures now compete with requests for the CPU.
  process.stderr.write(JSON.stringify({ level: 40, time: new Date().toISOString(), msg: 'the image worker could not lower its priority (neither SCHED_IDLE nor a nice value was permitted): pictures take CPU from requests' }) + '\n')
}

// Jobs come over the IPC channel; a job's picture follows on a pipe of its own, and the answer's
// files go back on another (image-worker.ts says why).
const pictures = new ByteReader(new Socket({ fd: PICTURES_FD, readable: true, writable: false }))
const files = new Socket({ fd: FILES_FD, readable: false, writable: true })

let rechecked = false
process.on('message', (job: ImageJob) => {
  pictures.read(job.length).then((bytes) => processImage(bytes, job.declared)).then(
    (processed) => {
      const made = [processed.thumb, processed.display, processed.full]
      process.send!({ id: job.id, processed: { width: processed.width, height: processed.height, files: made.map((f) => ({ name: f.name, length: f.bytes.length })) } } satisfies ImageAnswer)
      for (const f of made.slice(0, -1)) files.write(f.bytes)
      return new Promise<void>((resolve) => files.write(made.at(-1)!.bytes, () => { resolve() }))
    },
    (err: unknown) => {
      process.send!((err instanceof HttpProblem && err.status === 400
        ? { id: job.id, invalid: err.message }
        : { id: job.id, failed: String((err as Error)?.message ?? err) }) satisfies ImageAnswer)
    }
  ).then(() => {
    // The picture's buffers (the upload, the files) live outside V8's heap, and this process
    // makes almost no other garbage: V8 collected them only once many of them had piled up, and
    // the worker's memory swung widely. A collection of this small heap costs little beside the
    // picture's own work.
    globalThis.gc?.()
    // The first picture started libuv's pool and libvips' threads: make sure of them once.
    if (!rechecked && !idle) lowerPriority()
    rechecked = true
  }, () => {})
})
// The service is gone (or closed the channel): nothing is left to do.
process.on('disconnect', () => process.exit(0))
