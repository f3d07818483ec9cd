import { readdirSync } from 'node:fs'
import { setPriority } from 'node:os'
import { HttpProblem } from '../http/problem.js'
import { processImage } from './images.js'
import type { ImageAnswer, ImageJob } from './image-worker.js'

// The image worker: a child process of the service (src/photos/image-worker.ts starts it) that
// turns uploads into their three files. Its only argument is its scheduling priority (a nice value).

const nice = Number(process.argv[2] ?? 0)

/**
 * Lowers the priority of every thread of this process. On Linux a nice value belongs to a thread,
 * and a thread starts with its creator's: libuv's pool and libvips' threads, created later by
 * threads already lowered, inherit it; threads node started before this code ran are lowered here.
 */
function lowerPriority (): void {
  try { setPriority(nice) } catch { /* not permitted: keep the default */ }
  let threads: string[] = []
  try { threads = readdirSync('/proc/self/task') } catch { /* not Linux: the call above did it for the process */ }
  for (const tid of threads) {
    try { setPriority(Number(tid), nice) } catch { /* exited */ }
  }
}
lowerPriority()

let lowered = false
process.on('message', (job: ImageJob) => {
  const bytes = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength)
  processImage(bytes, job.declared).then(
    (processed): ImageAnswer => ({ id: job.id, processed }),
    (err: unknown): ImageAnswer => err instanceof HttpProblem && err.status === 400
      ? { id: job.id, invalid: err.message }
      : { id: job.id, failed: String((err as Error)?.message ?? err) }
  ).then((answer) => {
    process.send!(answer)
    // The first picture started libuv's pool and libvips' threads: make sure of them once.
    if (!lowered) lowerPriority()
    lowered = true
  }, () => {})
})
// The service is gone (or closed the channel): nothing is left to do.
process.on('disconnect', () => process.exit(0))
