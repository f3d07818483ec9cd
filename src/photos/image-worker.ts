import { fork, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { Socket } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { HttpProblem } from '../http/problems/problem.js'
import { ByteReader } from './byte-reader.js'
import { invalidPicture, type Processed } from './images.js'
import type { UploadType } from './schemas.js'

/** A picture to process; its `length` bytes follow on the pictures pipe. */
export interface ImageJob { id: number, declared: UploadType, length: number }
/** The answer; a processed picture's files (thumb, display, full) follow on the files pipe. */
export type ImageAnswer = { id: number } &
  ({ processed: { width: number, height: number, files: Array<{ name: string, length: number }> } } | { invalid: string } | { failed: string })

/** The worker's file descriptors of the two pipes (after stdin, stdout, stderr and the IPC channel). */
export const PICTURES_FD = 4
export const FILES_FD = 5

/**
 * The worker's priority. It puts itself in the idle scheduling class (image-process.ts): it runs
 * on cycles the service's requests leave, and a request that wakes takes the core at once. Where
 * that cannot be had, this nice value (19, the lowest) is used: at 10 the worker's threads still
 * held a core for slices that landed in the reads' p99 beside uploads.
 */
const IMAGE_NICE = 19

// Built, the worker is the .js beside this module (dist/src/photos/ or dist/bundle/). Run from
// source (tests, tools under tsx), it is the .ts file beside this one, bundled by esbuild (a
// development dependency, as tsx is) once a process: started with tsx's loader, each worker
// compiled its modules again, and the tests start one for every app that is sent a picture.
const FROM_SOURCE = import.meta.url.endsWith('.ts')
const ENTRY = fileURLToPath(new URL(FROM_SOURCE ? './image-process.ts' : './image-process.js', import.meta.url))

/**
 * From source, the worker's bundled script, written once a process into a folder of its own under
 * node_modules/.cache (so that its packages, sharp's dynamic import included, resolve as from the
 * source), removed when the process exits.
 */
let bundledEntry: string | undefined
function sourceEntry (): string {
  if (bundledEntry === undefined) {
    const require = createRequire(ENTRY)
    const { buildSync } = require('esbuild') as typeof import('esbuild')
    const { outputFiles } = buildSync({ entryPoints: [ENTRY], bundle: true, platform: 'node', format: 'cjs', packages: 'external', write: false, logLevel: 'silent', define: { 'import.meta.url': JSON.stringify(pathToFileURL(ENTRY).href) } })
    const cache = join(dirname(dirname(require.resolve('esbuild/package.json'))), '.cache')
    mkdirSync(cache, { recursive: true })
    const dir = mkdtempSync(join(cache, 'plants-image-process-'))
    process.once('exit', () => { rmSync(dir, { recursive: true, force: true }) })
    bundledEntry = join(dir, 'image-process.cjs')
    writeFileSync(bundledEntry, outputFiles[0].text)
  }
  return bundledEntry
}

const workerStopped = (): HttpProblem =>
  new HttpProblem(503, 'images-busy', 'The image worker stopped while processing the picture; retry shortly', undefined, { 'retry-after': '2' })

/**
 * The longest one picture may take in the worker. libvips cannot be interrupted from outside, and
 * some pictures cost far more than their bytes say (a WebP of a few kilobytes and many megapixels):
 * past this the worker is killed and the next picture starts a new one. The work is given up
 * rather than refused as invalid, since the same picture may be quick on an idle machine.
 */
export const PICTURE_DEADLINE_MS = 20_000

const overran = (ms: number): HttpProblem =>
  new HttpProblem(503, 'images-busy', `The picture took longer than ${ms / 1000} s to process and was given up; retry later, or send a smaller picture`, undefined, { 'retry-after': '2' })

interface Waiting { resolve: (p: Processed) => void, reject: (err: Error) => void, child: ChildProcess, deadline: NodeJS.Timeout }

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
 * Jobs and answers go over the IPC channel; the bytes go over two pipes of their own. Sent on the
 * channel they were copied whole on the event loop: serialised, framed, then joined from their
 * chunks (for a phone picture, long enough each to show in the p99 of the reads beside uploads). A picture is
 * written to its pipe from the upload's own buffer, and files arrive a chunk at a time into
 * buffers of their own (ByteReader), which the store may then move to its writer thread.
 */
export class ImageWorker {
  private child: { process: ChildProcess, pictures: Socket, files: ByteReader, pipes: Socket[] } | undefined
  private next = 0
  private readonly pending = new Map<number, Waiting>()

  /** `deadlineMs`: see PICTURE_DEADLINE_MS (tests shorten it). */
  constructor (public deadlineMs = PICTURE_DEADLINE_MS) {}

  process (bytes: Buffer, declared: UploadType): Promise<Processed> {
    const child = this.child ?? this.start()
    const id = this.next++
    return new Promise<Processed>((resolve, reject) => {
      const deadline = setTimeout(() => { this.overrun(id) }, this.deadlineMs)
      this.pending.set(id, { resolve, reject, child: child.process, deadline })
      // Only a picture in progress keeps the process alive: an idle worker never holds it open.
      this.hold(true)
      child.process.send({ id, declared, length: bytes.length } satisfies ImageJob, (err) => { if (err) this.settle(id)?.reject(workerStopped()) })
      child.pictures.write(bytes)
    })
  }

  /** Stops the worker (a picture in progress is answered 503). */
  async close (): Promise<void> {
    const child = this.child?.process
    if (!child) return
    this.child = undefined
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.ref()
    child.kill('SIGTERM')
    await exited
  }

  private hold (busy: boolean): void {
    if (!this.child) return
    for (const handle of [this.child.process, this.child.process.channel, ...this.child.pipes]) {
      if (busy) handle?.ref()
      else handle?.unref()
    }
  }

  private start (): NonNullable<ImageWorker['child']> {
    const child = fork(FROM_SOURCE ? sourceEntry() : ENTRY, [String(IMAGE_NICE)], {
      // --expose-gc: see image-process.ts, after each picture.
      execArgv: ['--expose-gc'],
      env: { ...process.env, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '1048576' },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe', 'pipe']
    })
    const pictures = (child.stdio as unknown as Socket[])[PICTURES_FD]
    const fileStream = (child.stdio as unknown as Socket[])[FILES_FD]
    const files = new ByteReader(fileStream)
    child.on('message', (answer: ImageAnswer) => {
      if ('processed' in answer) {
        // Read in the order the answers came, whenever the bytes arrive.
        const { width, height, files: made } = answer.processed
        // The picture's work is done: its files are on their way.
        clearTimeout(this.pending.get(answer.id)?.deadline)
        files.read(made.reduce((n, f) => n + f.length, 0)).then((all) => {
          let start = 0
          const [thumb, display, full] = made.map(({ name, length }) => ({ name, bytes: all.subarray(start, (start += length)) }))
          this.settle(answer.id)?.resolve({ width, height, thumb, display, full })
        }, () => {})
        return
      }
      const waiting = this.settle(answer.id)
      if ('invalid' in answer) waiting?.reject(invalidPicture(answer.invalid))
      else waiting?.reject(new Error(`image worker: ${answer.failed}`))
    })
    const stopped = (): void => {
      if (this.child?.process === child) this.child = undefined
      for (const [id, waiting] of [...this.pending]) if (waiting.child === child) this.settle(id)?.reject(workerStopped())
    }
    child.on('exit', stopped)
    child.on('error', stopped)
    // A write to a worker that just died fails here; its upload is answered by `stopped`.
    pictures.on('error', () => {})
    fileStream.on('error', () => {})
    this.child = { process: child, pictures, files, pipes: [pictures, fileStream] }
    this.hold(false)
    return this.child
  }

  /**
   * A picture past its deadline: answered at once, and its worker killed (SIGKILL: libvips' threads
   * may be deep in a decode). The worker is forgotten first, so the next picture starts a new one
   * at once; whatever else the old one held is answered 503 when it exits.
   */
  private overrun (id: number): void {
    const waiting = this.settle(id)
    if (!waiting) return
    waiting.reject(overran(this.deadlineMs))
    if (this.child?.process === waiting.child) {
      for (const pipe of this.child.pipes) pipe.destroy()
      this.child = undefined
    }
    waiting.child.kill('SIGKILL')
  }

  private settle (id: number): Waiting | undefined {
    const waiting = this.pending.get(id)
    if (waiting) clearTimeout(waiting.deadline)
    this.pending.delete(id)
    if (this.pending.size === 0) this.hold(false)
    return waiting
  }
}
