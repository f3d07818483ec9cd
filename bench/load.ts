import autocannon from 'autocannon'
import { encodeCursor, type PlantQuery } from '../src/plants/query.js'
import { plantFor } from './plants.js'

// The load generator: a long-lived child of run.ts, pinned to its own core, that runs one
// autocannon measurement per message and answers with the figures. One process for the whole
// run, so no measurement pays for a node start-up.

export type Op = 'post' | 'put' | 'get' | 'list' | 'search' | 'search-rare' | 'sorted' | 'inventory' | 'patch' | 'photo'
/** The operations only the service has: the ceiling, the floor and an older baseline are not measured on them. */
export const SERVICE_ONLY: Op[] = ['search', 'search-rare', 'sorted', 'inventory', 'patch']
const FIRST_PAGE: PlantQuery = { statuses: [], tags: [], terms: [], sort: 'id' }
const STATUSES = ['available', 'pending', 'sold']
/** `paths`: for `photo`, the photo files (`/v3/photos/…`) to GET at random (bench/photos.ts uploads them first). */
export interface Job { url: string, op: Op, seconds: number, connections: number, idMax: number, paths?: string[] }
export interface Figures { rps: number, p50: number, p99: number, requests: number, non2xx: number, errors: number, cpuUs?: number, bytesPerSecond?: number }

// Each connection is its own autocannon instance with its own prebuilt requests: autocannon then
// sends ready buffers (a setupRequest per request costs the generator about half its rate), and
// the connections do not walk the same ids in lockstep, which would make reads look cached.
const PER_CONNECTION = 1024
const json = { 'content-type': 'application/json' }

function requestsFor (op: Op, idMax: number, connection: number, paths: string[] = []): autocannon.Request[] {
  const id = (): number => 1 + Math.floor(Math.random() * idMax)
  return Array.from({ length: PER_CONNECTION }, (_, i): autocannon.Request => {
    const n = connection * PER_CONNECTION + i
    switch (op) {
      case 'post':
        return { method: 'POST', path: '/v3/plant', headers: json, body: JSON.stringify(plantFor(n)) }
      case 'put':
        return { method: 'PUT', path: '/v3/plant', headers: json, body: JSON.stringify({ id: id(), ...plantFor(n) }) }
      case 'get':
        return { method: 'GET', path: `/v3/plant/${id()}` }
      case 'patch':
        return { method: 'PATCH', path: `/v3/plant/${id()}`, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ status: STATUSES[n % 3] }) }
      case 'search':
        // A common term: one plant in ten is a Monstera.
        return { method: 'GET', path: '/v3/plant?limit=20&q=stera' }
      case 'search-rare':
        // A rare term: the number of one plant (and of the few whose numbers contain it).
        return { method: 'GET', path: `/v3/plant?limit=20&q=%23${Math.max(10, id())}` }
      case 'sorted':
        return { method: 'GET', path: `/v3/plant?limit=20&sort=${n % 2 === 0 ? 'name' : '-name'}` }
      case 'inventory':
        return { method: 'GET', path: '/v3/store/inventory' }
      case 'photo':
        return { method: 'GET', path: paths[Math.floor(Math.random() * paths.length)] }
      default: {
        // A page of 20 from anywhere in the catalogue: the cursor is the id the page starts after.
        const after = 1 + Math.floor(Math.random() * Math.max(1, idMax - 20))
        return { method: 'GET', path: `/v3/plant?limit=20&cursor=${encodeCursor(FIRST_PAGE, { id: after })}` }
      }
    }
  })
}

function percentile (sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

async function measure (job: Job): Promise<Figures> {
  // autocannon's own histogram keeps whole milliseconds; at these rates p50 is about 1 ms, so keep the exact times.
  let times = new Float64Array(1 << 20)
  let count = 0
  let bytes = 0
  const record = (_client: unknown, status: number, size: number, ms: number): void => {
    if (status < 200 || status >= 300) return
    bytes += size
    if (count === times.length) {
      const bigger = new Float64Array(times.length * 2)
      bigger.set(times)
      times = bigger
    }
    times[count++] = ms
  }
  const instances = Array.from({ length: job.connections }, (_, c) => {
    const instance = autocannon({ url: job.url, connections: 1, duration: job.seconds, requests: requestsFor(job.op, job.idMax, c, job.paths) })
    instance.on('response', record)
    return instance
  })
  const results = await Promise.all(instances)
  const sorted = times.subarray(0, count).sort()
  const sum = (f: (r: autocannon.Result) => number): number => results.reduce((n, r) => n + f(r), 0)
  return {
    rps: Math.round(sum((r) => r['2xx'] / r.duration)),
    // autocannon's own histogram keeps whole milliseconds; at these rates p50 is about 1 ms, so keep the exact times.
    p50: Math.round(percentile(sorted, 50) * 1000) / 1000,
    p99: Math.round(percentile(sorted, 99) * 1000) / 1000,
    requests: sum((r) => r.requests.total),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors + r.timeouts),
    // Response bytes (headers included) of the 2xx answers: a photo file is far larger than a plant.
    bytesPerSecond: Math.round(bytes / job.seconds)
  }
}

process.on('message', (job: Job) => {
  measure(job).then(
    (figures) => process.send?.({ ok: true, figures }),
    (err) => process.send?.({ ok: false, error: String(err) })
  )
})
process.on('disconnect', () => process.exit(0))
