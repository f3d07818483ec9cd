import { Readable } from 'node:stream'
import { FILE_CHUNK_BYTES, type StoredFile } from '../catalogue/photo.js'

/** A view of the bytes as a Buffer, without a copy. */
export const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/**
 * A photo file's body, read from the store a chunk at a time (FILE_CHUNK_BYTES), as fast as the
 * client takes it. The first chunk comes with the read that found the file; each next one is read
 * only once the response has taken the one before: highWaterMark 0 reads nothing ahead, and the
 * response's pipe pauses this stream while its socket is full. So a client that stops reading
 * holds one chunk, not the file (non-reading GETs of a large photo had pinned their whole files
 * when each read all of it), and no read costs the event loop more than a chunk.
 */
export class FileBody extends Readable {
  private next = 1

  /** `readChunk(n)`: the file's chunk n, as the store answers it (undefined when the file is gone). */
  constructor (private readonly readChunk: (n: number) => Promise<StoredFile | undefined>, first: Uint8Array, private readonly size: number) {
    super({ highWaterMark: 0 })
    this.push(asBuffer(first))
    if (first.length >= size) this.push(null)
  }

  override _read (): void {
    const n = this.next++
    this.readChunk(n).then((file) => {
      // Removed meanwhile (no photo names it any more): the response is cut short, as its length says.
      if (!file?.chunk || file.chunk.length === 0) {
        this.destroy(new Error(`photo file chunk ${n} is gone`))
        return
      }
      this.push(asBuffer(file.chunk))
      if (n * FILE_CHUNK_BYTES + file.chunk.length >= this.size) this.push(null)
    }, (err: unknown) => { this.destroy(err as Error) })
  }
}
