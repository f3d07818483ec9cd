import { HttpProblem } from '../problems/problem.js'

/** Seconds a refused client is asked to wait: streams are long-lived, so a slot frees slowly. */
const RETRY_AFTER = '5'

/**
 * Caps long answers open at once, in all and per client address: an event stream holds a socket, a
 * heartbeat and a place in the feed; a large photo file sent to a client that does not read fills
 * its socket's kernel buffer (up to 4 MiB each on loopback). Without a cap one client could hold
 * the process's sockets or the machine's memory.
 */
export class StreamLimits {
  private open = 0
  private anonymousOpen = 0
  private readonly byAddress = new Map<string, number>()

  /**
   * `what`: the streams counted, as a refusal names them ("event streams"). `anonymousMax`: how many
   * of them clients without a key may hold, so that many anonymous ones leave room for a keyed one.
   */
  constructor (private readonly what: string, private readonly max: number, private readonly maxPerAddress: number, private readonly anonymousMax = max) {}

  /**
   * Takes a slot for `address` (`anonymous`: a client without a key, where keys exist), or throws 503
   * (all taken, or all that anonymous clients may take) / 429 (this address has its share); returns its release.
   */
  acquire (address: string, anonymous = false): () => void {
    if (this.open >= this.max) {
      throw new HttpProblem(503, 'service-busy', `This instance serves at most ${this.max} ${this.what} at once; retry later`, undefined, { 'retry-after': RETRY_AFTER })
    }
    if (anonymous && this.anonymousOpen >= this.anonymousMax) {
      throw new HttpProblem(503, 'service-busy', `This instance serves at most ${this.anonymousMax} ${this.what} without an API key at once; retry later, or send a key (Authorization: Bearer <key>)`, undefined, { 'retry-after': RETRY_AFTER })
    }
    const mine = this.byAddress.get(address) ?? 0
    if (mine >= this.maxPerAddress) {
      const refused = new HttpProblem(429, 'too-many-requests', `At most ${this.maxPerAddress} ${this.what} per client address at once; finish or close one first`, undefined, { 'retry-after': RETRY_AFTER })
      refused.limit = this.what
      throw refused
    }
    this.open++
    if (anonymous) this.anonymousOpen++
    this.byAddress.set(address, mine + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      this.open--
      if (anonymous) this.anonymousOpen--
      const left = this.byAddress.get(address)! - 1
      if (left === 0) this.byAddress.delete(address)
      else this.byAddress.set(address, left)
    }
  }
}
