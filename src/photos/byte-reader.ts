import type { Readable } from 'node:stream'

interface Wanted { buffer: Buffer, filled: number, resolve: (bytes: Buffer) => void }

/**
 * Reads byte strings of known lengths, in the order asked, from a stream: the pictures and their
 * files between the service and its image worker (image-worker.ts). Each is copied into a buffer of
 * its own as its chunks arrive (64 KiB at a time), so a picture never costs one long copy on the
 * event loop (a whole picture's copy showed in the reads' p99), and the buffer is the picture's
 * alone: nothing else shares its memory, so it may be moved to another thread.
 */
export class ByteReader {
  private readonly wanted: Wanted[] = []
  /** Bytes that arrived before they were asked for. */
  private readonly early: Buffer[] = []

  constructor (stream: Readable) {
    stream.on('data', (chunk: Buffer) => {
      this.early.push(chunk)
      this.fill()
    })
  }

  /** The next `length` bytes of the stream, after those of every earlier read. */
  read (length: number): Promise<Buffer> {
    return new Promise((resolve) => {
      // allocUnsafeSlow: never a slice of Node's shared 8 KiB pool, whatever the length.
      this.wanted.push({ buffer: Buffer.allocUnsafeSlow(length), filled: 0, resolve })
      this.fill()
    })
  }

  private fill (): void {
    for (;;) {
      const wanted = this.wanted[0]
      if (!wanted) return
      if (wanted.filled === wanted.buffer.length) {
        this.wanted.shift()
        wanted.resolve(wanted.buffer)
        continue
      }
      const chunk = this.early[0]
      if (!chunk) return
      const n = chunk.copy(wanted.buffer, wanted.filled)
      wanted.filled += n
      if (n === chunk.length) this.early.shift()
      else this.early[0] = chunk.subarray(n)
    }
  }
}
