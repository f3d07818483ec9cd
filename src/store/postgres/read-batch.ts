// Reads by key that arrive in one turn of the event loop share one query, on one pool checkout:
// 32 GETs at once cost one round trip instead of 32 checkouts and 32 round trips. The query starts
// after every request in it has arrived, so it reflects every commit acknowledged before any of them
// (on any instance): batching never serves an older state than a query per request would.

interface Waiter<V> { resolve: (value: V) => void, reject: (error: unknown) => void }

export class ReadBatch<K, V> {
  private waiting = new Map<K, Array<Waiter<V>>>()
  private scheduled = false

  /** `load` answers every key it is given (a missing one: whatever `V` says "none" with). */
  constructor (private readonly load: (keys: K[]) => Promise<Map<K, V>>, private readonly missing: V) {}

  get (key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      const waiters = this.waiting.get(key)
      if (waiters) waiters.push({ resolve, reject })
      else this.waiting.set(key, [{ resolve, reject }])
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => { this.flush() })
      }
    })
  }

  private flush (): void {
    const batch = this.waiting
    this.waiting = new Map()
    this.scheduled = false
    this.load([...batch.keys()]).then((found) => {
      for (const [key, waiters] of batch) {
        const value = found.has(key) ? found.get(key)! : this.missing
        for (const w of waiters) w.resolve(value)
      }
    }, (error: unknown) => {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(error)
    })
  }
}
