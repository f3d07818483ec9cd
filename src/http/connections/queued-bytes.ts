import type { ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { onSendHookHandler } from 'fastify'
import { connectionKey, readSendQueues, type Family } from './kernel-send-queues.js'
import { HttpProblem } from '../problems/problem.js'

/**
 * An answer larger than this is a large answer: as large as a photo file's chunk, so a file of
 * more than one chunk is one, and so is a page of more bytes than that.
 */
export const LARGE_ANSWER_BYTES = 128 * 1024
/** The 503 of a route that may send a large answer, as its OpenAPI document says it. */
export const QUEUE_FULL_OR_STORAGE = 'Storage unavailable (storage-unavailable) or shutting down (shutting-down); or, for an answer over 128 KiB, too many bytes queued to clients that have not read them ' +
  '(send-queue-full: MAX_QUEUED_BYTES); see Retry-After'
/** Seconds a refused client is asked to wait: a client that does not read is cut off within a minute. */
const RETRY_AFTER = '5'
/** The kernel's queues are read at most this often, and for at most 5% of the time (see look()). */
const LOOK_EVERY_MS = 100
/**
 * ...and at least this often while anything is charged: a look's time includes the wait for a busy
 * event loop, and twenty times a loaded host's wait kept clients long gone charged for most of a minute.
 */
const LOOK_AT_LEAST_EVERY_MS = 1000
/** Errors that mean the client reset the connection: the kernel dropped what it held for it. */
const PEER_GONE = new Set(['ECONNRESET', 'EPIPE'])
/** What the kernel holds, by connection (undefined: the kernel does not say). */
type KernelReader = (families: Iterable<Family>) => Promise<Map<string, number> | undefined>

interface Connection {
  /** Its key and family in the kernel's tables, taken while it is open (a closed socket has no ports). */
  key: string
  family: Family
  /** What the kernel held for it, sent and not acknowledged, at the last look; and what the socket had handed the kernel then. */
  kernel: number
  flushedThen: number
  /** What the answer in progress on it may still queue; 0 once it is over (a connection's answers take turns). */
  reserved: number
}

/** The bytes a socket has handed to the kernel: all it was given, less what still waits in the service. */
const flushed = (socket: Socket): number => (socket.bytesWritten ?? 0) - socket.writableLength

const mib = (bytes: number): string => (bytes / 1048576).toFixed(1)

/**
 * The bytes this process has queued to clients in large answers (photo files, pages, event
 * streams), over all connections together, against MAX_QUEUED_BYTES.
 *
 * A client that does not read leaves bytes in two places. The service holds what the kernel has
 * not taken yet (`writableLength`: a chunk for a file, which writes its next only once the last
 * drained; a whole page). The kernel holds what it took and the client has not acknowledged, up
 * to its send buffer (4 MiB on Linux): far more there than the chunk each holds in the service.
 * So a connection is charged both: the kernel's part as Linux last counted it
 * (read at most every 100 ms, off the event loop), plus what the socket handed it since, at most a send buffer. An answer
 * in progress is charged at least what it may queue (its size, at most a send buffer and what the
 * service holds at once), so answers admitted together cannot overshoot the bound; once it is over
 * the connection is charged what is measured, which a client that read drops to nothing at the
 * next look; a connection the service closed stays charged what the kernel still holds for it.
 * Where the kernel says nothing (not Linux), what a connection handed it stays charged until it
 * closes.
 */
export class QueuedBytes {
  private readonly connections = new Map<Socket, Connection>()
  private lookedAt = -Infinity
  private lookEveryMs = LOOK_EVERY_MS
  private looking = false
  /** Connections the service closed with bytes still in the kernel's send queue (an orphan keeps sending them), by key. */
  private readonly closed = new Map<string, { bytes: number, family: Family }>()

  /**
   * `bound`: this process's share of MAX_QUEUED_BYTES. `socketBuffer`: the most a socket's kernel
   * send buffer holds. `readKernel`: the kernel's send queues, by connection.
   */
  constructor (readonly bound: number, private readonly socketBuffer: number, private readonly readKernel: KernelReader = readSendQueues,
    private readonly now: () => number = () => performance.now()) {}

  /** Connections charged: open ones that have carried a large answer, and closed ones the kernel still holds bytes of. */
  get connectionsCharged (): number { return this.connections.size + this.closed.size }

  /** The bytes queued now to the clients of large answers. */
  get queued (): number {
    this.look()
    let total = 0
    for (const [socket, connection] of this.connections) total += this.charge(socket, connection)
    for (const { bytes } of this.closed.values()) total += bytes
    return total
  }

  /**
   * Admits a large answer of `size` bytes about to be sent on `res`, of which the service holds at
   * most `heldAtOnce` at a time (a file sent a chunk at a time: one chunk; a page: all of it); or
   * throws 503 send-queue-full when the bytes already queued leave no room for it.
   */
  admit (res: ServerResponse, size: number, heldAtOnce: number): void {
    const reserve = Math.min(size, this.socketBuffer + heldAtOnce)
    this.refuseBeyond(reserve)
    const connection = this.track(res.socket)
    if (connection === undefined) return
    connection.reserved = reserve
    const over = (): void => { connection.reserved = 0 }
    res.once('finish', over)
    res.once('close', over)
  }

  /**
   * Admits a new event stream on `res`, or throws 503: it is endless, so nothing is reserved for
   * it, but the account must have room for a send buffer (what a stream whose client stops reading fills).
   */
  admitStream (res: ServerResponse): void {
    this.refuseBeyond(this.socketBuffer)
    this.track(res.socket)
  }

  private refuseBeyond (reserve: number): void {
    const queued = this.queued
    // An empty account admits any answer: a bound below one answer's share would refuse it for good.
    if (queued === 0 || queued + reserve <= this.bound) return
    throw new HttpProblem(503, 'send-queue-full',
      `${mib(queued)} MiB is queued to clients that have not read it, and this instance queues at most ${mib(this.bound)} MiB (MAX_QUEUED_BYTES); retry later`,
      undefined, { 'retry-after': RETRY_AFTER })
  }

  private track (socket: Socket | null): Connection | undefined {
    // inject()'s requests have no socket to a client, and a client gone has nothing queued: nothing to charge.
    if (!(socket instanceof Socket) || socket.destroyed) return undefined
    let connection = this.connections.get(socket)
    if (connection === undefined) {
      const opened: Connection = { key: connectionKey(socket.localPort, socket.remotePort), family: socket.remoteFamily as Family, kernel: 0, flushedThen: flushed(socket), reserved: 0 }
      this.connections.set(socket, opened)
      socket.once('close', () => { this.close(socket, opened) })
      connection = opened
    }
    return connection
  }

  /**
   * A connection closed however it ended: what the service held for it is gone, but when the
   * service closed it (an idle keep-alive, a client cut off) the kernel goes on sending what it
   * took, as long as the client keeps its end open. So its kernel part stays charged until a look
   * finds it sent or dropped; where the kernel says nothing, it goes at once. A connection the
   * client reset (as a client's kernel does when it closes with bytes unread) holds nothing in the
   * kernel: a reset drops its send queue.
   */
  private close (socket: Socket, connection: Connection): void {
    this.connections.delete(socket)
    if (PEER_GONE.has((socket.errored as NodeJS.ErrnoException | null)?.code ?? '')) return
    const bytes = this.kernelPart(socket, connection)
    if (bytes > 0 && this.lookedAt !== Infinity) this.closed.set(connection.key, { bytes, family: connection.family })
  }

  /** What the kernel holds for a connection: as last read, plus what the socket handed it since; at most a send buffer. */
  private kernelPart (socket: Socket, connection: Connection): number {
    return Math.min(this.socketBuffer, connection.kernel + flushed(socket) - connection.flushedThen)
  }

  private charge (socket: Socket, connection: Connection): number {
    return Math.max(socket.writableLength + this.kernelPart(socket, connection), connection.reserved)
  }

  /**
   * Has the kernel's figures read again when they are due, off the event loop: until they come, the
   * last ones stand with what was handed to the kernel since. What each socket had handed it is
   * noted before the read, so bytes taken meanwhile count twice at worst, never not at all. Reads
   * take at most 5% of the time, however many sockets the host has.
   */
  private look (): void {
    const started = this.now()
    if (this.looking || this.connections.size + this.closed.size === 0 || started - this.lookedAt < this.lookEveryMs) return
    this.looking = true
    const before = new Map([...this.connections.keys()].map((socket) => [socket, flushed(socket)]))
    const closedBefore = [...this.closed.keys()]
    const families = [...this.connections.values(), ...this.closed.values()].map((c) => c.family)
    this.readKernel(families).then((queues) => {
      if (queues === undefined) {
        this.lookedAt = Infinity
        this.closed.clear()
        return
      }
      for (const [socket, flushedThen] of before) {
        const connection = this.connections.get(socket)
        if (connection === undefined) continue
        connection.kernel = queues.get(connection.key) ?? 0
        connection.flushedThen = flushedThen
      }
      // A connection closed since the read began keeps its figure until the next look.
      for (const key of closedBefore) {
        const bytes = queues.get(key) ?? 0
        const entry = this.closed.get(key)
        if (entry === undefined) continue
        if (bytes === 0) this.closed.delete(key)
        else entry.bytes = bytes
      }
      this.lookedAt = this.now()
      this.lookEveryMs = Math.min(LOOK_AT_LEAST_EVERY_MS, Math.max(LOOK_EVERY_MS, 20 * (this.lookedAt - started)))
    }, () => {
      this.lookedAt = this.now()
    }).finally(() => { this.looking = false })
  }
}

/**
 * The onSend hook of routes whose pages may be large (plant lists, which exports read, the
 * feed's pages, history, the trash): a page over LARGE_ANSWER_BYTES is admitted before it is
 * written, or answered 503 instead. It is written at once, so the service may hold all of it.
 */
export function admitLargePages (queued: QueuedBytes): onSendHookHandler {
  return (_request, reply, payload, done) => {
    // A string's UTF-8 length is at least its length and at most three times it: measured only when it may be over.
    const size = typeof payload === 'string'
      ? (payload.length * 3 <= LARGE_ANSWER_BYTES ? payload.length : Buffer.byteLength(payload))
      : Buffer.isBuffer(payload) ? payload.length : 0
    if (size <= LARGE_ANSWER_BYTES) {
      done(null, payload)
      return
    }
    try {
      queued.admit(reply.raw, size, size)
      done(null, payload)
    } catch (err) {
      done(err as Error)
    }
  }
}
