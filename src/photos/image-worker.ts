import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { HttpProblem } from '../http/problem.js'
import { invalidPicture, type Processed } from './images.js'
import type { UploadType } from './schemas.js'

export interface ImageJob { id: number, bytes: Uint8Array, declared: UploadType }
export type ImageAnswer = { id: number } & ({ processed: Processed } | { invalid: string } | { failed: string })

/**
 * The worker's priority. It puts itself in the idle scheduling class (image-process.ts): it runs
 * on cycles the service's requests leave, and a request that wakes takes the core at once. Where
 * that cannot be had, this nice value (19, the lowest) is used: at 10 the worker's threads still
 * held a core for slices of a few ms that landed in the reads' p99 (2.8–3.5× beside uploads).
 */
const IMAGE_NICE = 19

// Run from source (tests, tools under tsx) the worker is the .ts file beside this one, started
// with tsx's loader; built, the .js beside this module (dist/src/photos/ or dist/bundle/).
const FROM_SOURCE = import.meta.url.endsWith('.ts')
const ENTRY = fileURLToPath(new URL(FROM_SOURCE ? './image-process.ts' : './image-process.js', import.meta.url))

const workerStopped = (): HttpProblem =>
  new HttpProblem(503, 'images-busy', 'The image worker stopped while processing the picture; retry shortly', undefined, { 'retry-after': '2' })

/**
 * The image work, in a child process of its own (src/photos/image-process.ts), started by the
 * first upload and kept until the app closes. A child rather than libuv's pool in this process:
 *  - its priority is lowered (idle class, or IMAGE_NICE), which a thread of the pool cannot be, so a picture
 *    uses every core nobody else needs (all three files at once) without slowing the requests;
 *  - glibc's malloc keeps an arena per thread that ever allocated, and decoded pictures left
 *    each one large: the child is limited to 2 arenas (MALLOC_ARENA_MAX, read by glibc at start),
 *    and the service's own memory holds no decoded picture;
 *  - a crash in a decoder (a native library fed hostile bytes) ends the child, not the service:
 *    the upload in progress is answered 503 and the next starts a new child.
 * The bytes go over the IPC channel (advanced serialization: buffers are copied, not encoded).
 */
export class ImageWorker {
  private child: ChildProcess | undefined
  private next = 0
  private readonly pending = new Map<number, { resolve: (p: Processed) => void, reject: (err: Error) => void }>()

  process (bytes: Buffer, declared: UploadType): Promise<Processed> {
    const child = this.child ?? this.start()
    const id = this.next++
    return new Promise<Processed>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      // Only a picture in progress keeps the process alive: an idle worker never holds it open.
      child.ref()
      child.channel?.ref()
      child.send({ id, bytes, declared } satisfies ImageJob, (err) => { if (err) this.settle(id)?.reject(workerStopped()) })
    })
  }

  /** Stops the worker (a picture in progress is answered 503). */
  async close (): Promise<void> {
    const child = this.child
    if (!child) return
    this.child = undefined
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.ref()
    child.kill('SIGTERM')
    await exited
  }

  private start (): ChildProcess {
    const child = fork(ENTRY, [String(IMAGE_NICE)], {
      // --expose-gc: see image-process.ts, after each picture.
      execArgv: [...(FROM_SOURCE ? ['--import', 'tsx'] : []), '--expose-gc'],
      env: { ...process.env, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '1048576' },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc']
    })
    child.on('message', (answer: ImageAnswer) => {
      const waiting = this.settle(answer.id)
      if (!waiting) return
      if ('processed' in answer) waiting.resolve(revive(answer.processed))
      else if ('invalid' in answer) waiting.reject(invalidPicture(answer.invalid))
      else waiting.reject(new Error(`image worker: ${answer.failed}`))
    })
    const stopped = (): void => {
      if (this.child === child) this.child = undefined
      for (const id of [...this.pending.keys()]) this.settle(id)?.reject(workerStopped())
    }
    child.on('exit', stopped)
    child.on('error', stopped)
    child.unref()
    child.channel?.unref()
    this.child = child
    return child
  }

  private settle (id: number): { resolve: (p: Processed) => void, reject: (err: Error) => void } | undefined {
    const waiting = this.pending.get(id)
    this.pending.delete(id)
    if (this.pending.size === 0) {
      this.child?.unref()
      this.child?.channel?.unref()
    }
    return waiting
  }
}

/** The files arrive as Uint8Arrays (structured clone); the stores take Buffers. */
function revive (p: Processed): Processed {
  const buffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength)
  return {
    ...p,
    thumb: { ...p.thumb, bytes: buffer(p.thumb.bytes) },
    display: { ...p.display, bytes: buffer(p.display.bytes) },
    full: { ...p.full, bytes: buffer(p.full.bytes) }
  }
}
