import { LRUCache } from 'lru-cache'
import type { KeyCheck } from '../catalogue/keys.js'
import type { KeyMatch, KeyStore } from '../store/key-store.js'
import { hashOf } from './secrets.js'

// What a request's key check asks: which key is this? Answered from memory, by the hash of the
// secret, so the check costs a SHA-256 and a map lookup. A Map lookup keyed by the hash leaks no
// more than the hash's own bits, and a hash tells nothing of the secret, so this is as safe as a
// constant-time compare of every key, and cheaper. A stored key's answer is kept for `ttlMs` (1 s)
// and then read again: a key revoked (or created) on any instance is seen by every other one within
// that second and one read, without a database round trip per request.

interface Entry { match: KeyMatch | undefined, at: number }

export interface KeyCacheOptions {
  /** How long a stored key's answer is believed (default 1000 ms): revocation reaches every instance within it. */
  ttlMs?: number
  /** Last-used times are written at most this often a key (default one minute). */
  touchEveryMs?: number
  now?: () => number
  /** Where a failed last-used write is reported (it is retried with the next one). */
  onError?: (err: unknown) => void
}

export class KeyCache {
  private readonly ttlMs: number
  private readonly touchEveryMs: number
  private readonly now: () => number
  /** Bounded, so a flood of made-up keys cannot grow memory: each costs a lookup, as without a cache. */
  private readonly entries = new LRUCache<string, Entry>({ max: 10_000 })
  private readonly loading = new Map<string, Promise<Entry>>()
  /** Once the database holds a key, it always will (revoked rows stay): only `false` is read again. */
  private storedKeys: { any: boolean, at: number } | undefined
  private readonly touchedAt = new Map<string, number>()
  private readonly pendingTouches = new Map<string, number>()
  private flushTimer: NodeJS.Timeout | undefined
  private flushing: Promise<void> = Promise.resolve()

  constructor (
    private readonly store: KeyStore,
    /** The keys of API_KEYS and API_KEYS_FILE: hex SHA-256 → their name (given, or `env-N`), always `admin`. */
    private readonly envKeys: Map<string, string>,
    private readonly options: KeyCacheOptions = {}
  ) {
    this.ttlMs = options.ttlMs ?? 1_000
    this.touchEveryMs = options.touchEveryMs ?? 60_000
    this.now = options.now ?? Date.now
  }

  /** The names of the keys of API_KEYS and API_KEYS_FILE, in the order given. */
  environmentKeys (): string[] {
    return [...new Set(this.envKeys.values())]
  }

  /** Whether requests must carry keys: API_KEYS is set, or the database holds (or held) a key. */
  keysRequired (): boolean | Promise<boolean> {
    if (this.envKeys.size > 0 || this.storedKeys?.any === true) return true
    if (this.storedKeys !== undefined && this.now() - this.storedKeys.at < this.ttlMs) return false
    return this.store.anyKeys().then((any) => { this.storedKeys = { any, at: this.now() }; return any })
  }

  /** The key a secret names, checked for revocation and expiry. */
  check (secret: string): KeyCheck | Promise<KeyCheck> {
    const hash = hashOf(secret)
    const env = this.envKeys.get(hash)
    if (env !== undefined) return { ok: true, name: env, scope: 'admin' }
    const entry = this.entries.get(hash)
    if (entry !== undefined && this.now() - entry.at < this.ttlMs) return this.verdict(entry.match)
    return this.load(hash).then((loaded) => this.verdict(loaded.match))
  }

  private verdict (match: KeyMatch | undefined): KeyCheck {
    if (match === undefined) return { ok: false, why: 'unknown' }
    if (match.revoked) return { ok: false, why: 'revoked', name: match.name }
    const now = this.now()
    if (match.expiresAt !== null && now >= match.expiresAt) return { ok: false, why: 'expired', name: match.name }
    this.used(match.name, now)
    return { ok: true, name: match.name, scope: match.scope }
  }

  /** One read per hash at a time: the requests that find an entry stale together share it. */
  private load (hash: string): Promise<Entry> {
    let loading = this.loading.get(hash)
    if (loading === undefined) {
      loading = this.store.byHash(hash).then((match) => {
        const entry = { match, at: this.now() }
        this.entries.set(hash, entry)
        return entry
      }).finally(() => { this.loading.delete(hash) })
      this.loading.set(hash, loading)
    }
    return loading
  }

  /** Notes a use; the write happens later, off the request's path, at most once a minute a key. */
  private used (name: string, now: number): void {
    const last = this.touchedAt.get(name)
    if (last !== undefined && now - last < this.touchEveryMs) return
    this.touchedAt.set(name, now)
    this.pendingTouches.set(name, now)
    this.flushTimer ??= setTimeout(() => { this.flushTimer = undefined; void this.flush() }, 0).unref()
  }

  /** Writes the pending last-used times (tests and close() call it to wait for them). */
  flush (): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pendingTouches.size === 0) return
      const batch = new Map(this.pendingTouches)
      this.pendingTouches.clear()
      try {
        await this.store.touch(batch)
      } catch (err) {
        // Kept for the next flush (a newer use of the same key wins).
        for (const [name, at] of batch) if (!this.pendingTouches.has(name)) this.pendingTouches.set(name, at)
        for (const name of batch.keys()) this.touchedAt.delete(name)
        this.options.onError?.(err)
      }
    })
    return this.flushing
  }

  /** Forgets what was learnt of keys (this instance's own create or revoke: seen at once, not after the TTL). */
  forget (): void {
    this.entries.clear()
    if (this.storedKeys?.any === false) this.storedKeys = undefined
  }

  async close (): Promise<void> {
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer)
    this.flushTimer = undefined
    await this.flush()
  }
}
