import { HttpProblem } from '../http/problems/problem.js'

/**
 * Bounds the image work: at most `active` pictures are processed at once, and at most `waiting`
 * more wait their turn. An upload takes its place before its body is read (so the bodies held in
 * memory are bounded too); when every place is taken it is refused at once with a 503.
 */
export class ImageQueue {
  private running = 0
  private admitted = 0
  private readonly turns: Array<() => void> = []
  /** Uploads refused because the queue was full (for the metrics). */
  refused = 0

  constructor (readonly active: number, readonly waiting: number) {}

  get depth (): number { return this.admitted }
  get processing (): number { return this.running }

  /** Takes a place or throws the 503; the returned function gives it back (call it exactly once). */
  admit (): () => void {
    if (this.admitted >= this.active + this.waiting) {
      this.refused++
      throw new HttpProblem(503, 'images-busy', `${this.admitted} pictures are being processed or waiting; retry shortly`, undefined, { 'retry-after': '2' })
    }
    this.admitted++
    let released = false
    return () => {
      if (released) return
      released = true
      this.admitted--
    }
  }

  /** Runs `work` when a processing slot is free. */
  async run<T> (work: () => Promise<T>): Promise<T> {
    if (this.running >= this.active) await new Promise<void>((resolve) => this.turns.push(resolve))
    else this.running++
    try {
      return await work()
    } finally {
      const next = this.turns.shift()
      if (next) next()
      else this.running--
    }
  }
}
