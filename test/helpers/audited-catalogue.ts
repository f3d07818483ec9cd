import assert from 'node:assert/strict'
import { send, type StoredRow } from './process.js'

// A write load whose every acknowledgement is remembered, so a crash can be audited afterwards.
// Each writer owns the plants it creates, so at most one of its writes is in flight at a kill.

interface Fields { name: string, category: string | null, tags: string[], status: string }
type Pending = { kind: 'update', fields: Fields } | { kind: 'delete' }

interface Expectation {
  /** The last acknowledged state: the fields, or null once a delete was acknowledged. */
  acked: Fields | null
  /** A write sent but not answered when the process died: it may or may not have happened. */
  pending?: Pending
}

const emptyStats = (): LoadStats => ({ acknowledged: 0, refused: 0, unanswered: 0, dropped: [], otherErrors: [] })
const STATUSES = ['available', 'pending', 'sold']

export interface LoadStats {
  acknowledged: number
  refused: number
  /** Requests that failed at the socket (the process died or stopped accepting). */
  unanswered: number
  /** Of those, the ones that connected and were then dropped (anything but ECONNREFUSED): the name each would write. */
  dropped: Array<{ request: string, error: string }>
  otherErrors: string[]
}

export class AuditedCatalogue {
  readonly plants = new Map<number, Expectation>()
  stats: LoadStats = emptyStats()

  /** Starts counting afresh (one round of load). */
  resetStats (): void { this.stats = emptyStats() }

  /**
   * Runs `writers` concurrent loops against `base` until `stop()` returns true or a request fails
   * at the socket. `label` makes every name unique, so a found row names the write that made it.
   */
  async load (base: string, label: string, writers: number, stop: () => boolean): Promise<void> {
    await Promise.all(Array.from({ length: writers }, (_, w) => this.writer(base, `${label}-w${w}`, stop)))
  }

  private async writer (base: string, label: string, stop: () => boolean): Promise<void> {
    const mine: number[] = []
    for (let i = 0; !stop(); i++) {
      const fields: Fields = { name: `${label}-${i}`, category: i % 3 === 0 ? null : `c${i % 5}`, tags: [`t${i % 7}`, label], status: STATUSES[i % 3] }
      const roll = Math.random()
      let pending: { id: number, change: Pending } | undefined
      let request = `POST ${fields.name}`
      try {
        if (mine.length === 0 || roll < 0.45) {
          const res = await send(base, { method: 'POST', path: '/v3/plant', body: fields })
          if (res.status !== 200) { this.unexpected('POST', res.status, res.body); continue }
          const plant = res.json()
          // The record carries what was sent, its photos (none for a plant just added) and more
          // (the store fields' defaults, its times), which this load does not audit.
          assert.deepEqual({ name: plant.name, category: plant.category, tags: plant.tags, status: plant.status, photos: plant.photos }, { ...fields, photos: [] })
          this.plants.set(plant.id, { acked: fields })
          mine.push(plant.id)
        } else if (roll < 0.85) {
          const id = mine[Math.floor(Math.random() * mine.length)]
          pending = { id, change: { kind: 'update', fields } }
          request = `PUT ${id} ${fields.name}`
          this.plants.get(id)!.pending = pending.change
          const res = await send(base, { method: 'PUT', path: '/v3/plant', body: { id, ...fields } })
          if (res.status !== 200) { this.unexpected('PUT', res.status, res.body); continue }
          this.plants.set(id, { acked: fields })
        } else {
          const index = Math.floor(Math.random() * mine.length)
          const id = mine[index]
          pending = { id, change: { kind: 'delete' } }
          request = `DELETE ${id}`
          this.plants.get(id)!.pending = pending.change
          const res = await send(base, { method: 'DELETE', path: `/v3/plant/${id}` })
          if (res.status !== 204) { this.unexpected('DELETE', res.status, res.body); continue }
          this.plants.set(id, { acked: null })
          mine.splice(index, 1)
        }
        this.stats.acknowledged++
      } catch (err) {
        // A wrong answer is a finding, never taken for a dead service (the writer stopping silently
        // left a test waiting for acknowledgements that would never come).
        if (err instanceof assert.AssertionError) {
          this.stats.otherErrors.push(`${request}: ${err.message}`)
          return
        }
        // The socket failed: the write is left pending, and this writer stops (the service is gone).
        this.stats.unanswered++
        const code = (err as NodeJS.ErrnoException).code
        if (code !== 'ECONNREFUSED') this.stats.dropped.push({ request, error: code ?? (err as Error).message })
        return
      }
    }
  }

  private unexpected (method: string, status: number, body: string): void {
    if (status >= 400 && status < 600) this.stats.refused++
    if (status >= 500 || status < 400) this.stats.otherErrors.push(`${method} → ${status} ${body.slice(0, 200)}`)
  }

  /**
   * The dropped requests that took effect anyway: a write applied but never answered. (One that took
   * no effect was never read by the service, e.g. reset in the listen backlog as the listener closed.)
   */
  droppedButApplied (found: Map<number, StoredRow>): string[] {
    const names = new Set([...found.values()].map((r) => r.name))
    const live = new Set(found.keys())
    return this.stats.dropped.filter(({ request }) => {
      const [method, a, b] = request.split(' ')
      if (method === 'POST') return names.has(a)
      if (method === 'PUT') return found.get(Number(a))?.name === b
      return !live.has(Number(a))
    }).map(({ request, error }) => `${request} (${error})`)
  }

  /**
   * Compares the rows found on disk with every acknowledged write. Returns how many plants were
   * checked; pending writes are then resolved to what was found, ready for the next round.
   */
  audit (found: Map<number, StoredRow>): { checked: number, lost: string[] } {
    const lost: string[] = []
    for (const [id, expectation] of this.plants) {
      const row = found.get(id)
      const stored = row && { name: row.name, category: row.category, tags: JSON.parse(row.tags) as string[], status: row.status }
      const allowed: Array<Fields | null> = [expectation.acked]
      if (expectation.pending) allowed.push(expectation.pending.kind === 'delete' ? null : expectation.pending.fields)
      const matches = allowed.some((a) => (a === null ? stored === undefined : stored !== undefined && sameFields(a, stored)))
      if (!matches) lost.push(`plant ${id}: expected ${JSON.stringify(allowed)}, found ${JSON.stringify(stored ?? null)}`)
      this.plants.set(id, { acked: stored ?? null })
    }
    return { checked: this.plants.size, lost }
  }
}

const sameFields = (a: Fields, b: Fields): boolean =>
  a.name === b.name && a.category === b.category && a.status === b.status && JSON.stringify(a.tags) === JSON.stringify(b.tags)
