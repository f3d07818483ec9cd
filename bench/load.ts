import autocannon from 'autocannon'
import { Client, type Dispatcher } from 'undici'
import type { PlantQuery } from '../src/catalogue/query.js'
import { encodeCursor } from '../src/plants/query.js'
import { barcodeFor, hasBarcode, hasSku, plantFor, seedPlantFor, skuFor } from './plants.js'
import { HISTORY_PLANTS } from './history-plants.js'

// The load generator: a long-lived child of run.ts, pinned to its own core, that runs one
// autocannon measurement per message and answers with the figures. One process for the whole
// run, so no measurement pays for a node start-up.

export type Op = 'post' | 'put' | 'get' | 'list' | 'search' | 'search-rare' | 'sorted' | 'inventory' | 'patch' | 'batch' | 'batch500' | 'photo' | 'path' | 'healthz' | 'hold' | SaleOp | FindingOp | HistoryOp
/**
 * A till's sale (bench/stock.ts): POST /v3/plant/{id}/stock/movements `{ delta: -1, reason: "sale" }`,
 * each with an Idempotency-Key of its own; `sale` of a random plant, `till` of the connection's own
 * plant (connection c sells plant 1 + c mod idMax: idMax 1 is every till on one plant).
 */
export type SaleOp = 'sale' | 'till'
/** The history pages (bench/history.ts): a plant with 1 version, and one with 1,000. */
export type HistoryOp = keyof typeof HISTORY_PLANTS
/** The finding reads, each judged by its p99 on the large catalogue against the small one. */
export type FindingOp = 'search-short' | 'search-accent' | 'sku' | 'barcode' | 'sort-price' | 'sort-updated' | 'count'
export const FINDING_OPS: FindingOp[] = ['search-short', 'search-accent', 'sku', 'barcode', 'sort-price', 'sort-updated', 'count']
/** The operations only the service has: the ceiling, the floor and an older baseline are not measured on them. */
export const SERVICE_ONLY: Op[] = ['search', 'search-rare', 'sorted', 'inventory', 'patch', 'batch', ...FINDING_OPS]
/** Plants created by one request of `batch` (its req/s times this is its plants/s, to set beside `post`'s req/s). */
export const BATCH_PLANTS = 100
/** Operations of one `batch500` request: the most a batch may hold (the bulk phase judges its latency). */
export const LARGEST_BATCH = 500
const FIRST_PAGE: PlantQuery = { statuses: [], tags: [], terms: [], sort: 'id' }
/**
 * `hold`: the most expensive reads the API allows, as an anonymous client would send
 * them: filters that match nothing with a sort (the four first measured), tags that are each common
 * but never on one plant (large and pet-safe: bench/plants.ts), a count of them, a common term
 * sorted by price, and the feed's largest page from its start.
 */
export const HOLD_PATHS = [
  '/v3/plant?category=nope&sort=-price',
  '/v3/plant?priceMin=499.99&priceMax=500&sort=-name',
  '/v3/plant?updatedSince=2099-01-01T00:00:00Z&sort=name',
  '/v3/plant?tag=large&tag=small&tag=rare&sort=-name',
  '/v3/plant?tag=large&tag=pet-safe&sort=-name',
  '/v3/plant/count?tag=large&tag=pet-safe',
  '/v3/plant?q=stera&sort=-price&limit=100',
  '/v3/plant/changes?after=0&limit=1000'
]
const STATUSES = ['available', 'pending', 'sold']
const SALE = JSON.stringify({ delta: -1, reason: 'sale' })
/**
 * `paths`: for `photo`, the photo files (`/v3/photos/…`) to GET at random (bench/photos.ts uploads
 * them first); for `path`, any paths, likewise.
 * `binary`: measure with a client that never looks at the bodies (see measureBinary).
 * `mix`: the first `connections` of the job's connections send `op` instead, measured apart
 * (`Figures.mixed`): one kind of request beside a load of another.
 * `seedOnly`: the target knows only the seed's fields (a --baseline from before the store fields, which
 * refuses the store fields as unknown): its POST, PUT and batch bodies leave them out.
 */
export interface Job {
  url: string
  op: Op
  seconds: number
  connections: number
  idMax: number
  paths?: string[]
  binary?: boolean
  mix?: { op: Op, connections: number }
  seedOnly?: boolean
  /** Sent with every request (bench/keys.ts: the key a read is made with). */
  headers?: Record<string, string>
}
export interface Figures {
  rps: number
  p50: number
  p99: number
  requests: number
  non2xx: number
  errors: number
  bytesPerSecond?: number
  /** CPU per answer, all the server's threads. */
  cpuUs?: number
  /** CPU per answer of its main thread alone: the event loop. */
  loopCpuUs?: number
  /** The connections of `Job.mix`, apart (the rest of the figures are the other connections'). */
  mixed?: Figures
}

// Each connection is its own autocannon instance with its own prebuilt requests: autocannon then
// sends ready buffers (a setupRequest per request costs the generator about half its rate), and
// the connections do not walk the same ids in lockstep, which would make reads look cached.
const PER_CONNECTION = 1024
const json = { 'content-type': 'application/json' }

export function requestsFor (op: Op, idMax: number, connection: number, paths: string[] = [], seedOnly = false): autocannon.Request[] {
  const id = (): number => 1 + Math.floor(Math.random() * idMax)
  // SKUs are unique: a created plant's is new to the catalogue (this job's own prefix, then the
  // request's number), and an updated plant keeps its own (skuFor its id, as the preload gave it,
  // or none), and its own barcode.
  // autocannon sends the same requests again once a connection has sent them all, which would make
  // each repeated POST a 409 sku-taken: POST connections get enough not to come round (4,096 each,
  // far beyond what a write reaches here in a round).
  const job = Math.random().toString(36).slice(2, 8)
  const created = (n: number): object => {
    if (seedOnly) return seedPlantFor(n)
    const plant = plantFor(n)
    return { ...plant, sku: plant.sku === null ? null : `NEW-${job}-${n}` }
  }
  const updated = (target: number, n: number): object => {
    if (seedOnly) return { id: target, ...seedPlantFor(n) }
    const plant = plantFor(n)
    // The plant keeps its own codes (a shop's PUT rewrites a plant, not its labels), so lookups keep finding it.
    return { id: target, ...plant, sku: plant.sku === null ? null : skuFor(target), barcode: hasBarcode(target - 1) ? barcodeFor(target - 1) : null }
  }
  // An index of a preloaded plant (id - 1) that has a SKU or a barcode: a lookup that finds one plant.
  const holder = (has: (i: number) => boolean): number => {
    let i = id() - 1
    while (i > 0 && !has(i)) i--
    return i
  }
  // A batch body is some 15 KB (75 KB for 500): 1,024 of them a connection would hold about half a gigabyte at 32 connections.
  // A sale's key is made as it is sent (below): a few requests do, and the generator builds them at
  // once (thousands of sales built per connection took a second of a 2 s round from the sales only).
  const count = op === 'batch' || op === 'batch500' || op === 'sale' || op === 'till' ? 16 : op === 'post' ? 4 * PER_CONNECTION : PER_CONNECTION
  return Array.from({ length: count }, (_, i): autocannon.Request => {
    const n = connection * count + i
    switch (op) {
      case 'post':
        return { method: 'POST', path: '/v3/plant', headers: json, body: JSON.stringify(created(n)) }
      case 'put':
        return { method: 'PUT', path: '/v3/plant', headers: json, body: JSON.stringify(updated(id(), n)) }
      case 'get':
        return { method: 'GET', path: `/v3/plant/${id()}` }
      case 'patch':
        return { method: 'PATCH', path: `/v3/plant/${id()}`, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ status: STATUSES[n % 3] }) }
      case 'sale':
      case 'till': {
        // Each send a key of its own: a key sent again would be a replay, answered without a sale.
        let sent = 0
        const key = `sale-${job}-${connection}-${i}-`
        return {
          method: 'POST',
          path: `/v3/plant/${op === 'sale' ? id() : 1 + (connection % idMax)}/stock/movements`,
          headers: json,
          body: SALE,
          setupRequest: (request) => ({ ...request, headers: { ...json, 'idempotency-key': `${key}${sent++}` } })
        }
      }
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
      case 'batch':
      case 'batch500': {
        // Creates, the heaviest operation (a row, its search-index entry, tags, counts, a change): a delivery of plants.
        const size = op === 'batch' ? BATCH_PLANTS : LARGEST_BATCH
        const body = JSON.stringify({ operations: Array.from({ length: size }, (_, k) => ({ op: 'create', plant: created(n * size + k) })) })
        // A connection sends its few bodies again and again: each send gets SKUs of its own, or every
        // repeat was refused whole (sku-taken) and counted as a failure. A batch is rare enough for
        // the generator to build its text per send.
        let sent = 0
        const prefix = `NEW-${job}-`
        return {
          method: 'POST',
          path: '/v3/plant/batch',
          headers: json,
          body,
          setupRequest: (request) => ({ ...request, body: body.replaceAll(prefix, `${prefix}${connection}.${i}.${sent++}-`) })
        }
      }
      case 'search-short':
        // A 1–2 character term matches word starts: one plant in ten is the "ZZ plant".
        return { method: 'GET', path: '/v3/plant?limit=20&q=zz' }
      case 'search-accent':
        // Accents are ignored: "café" finds the plants spelt "Cafe" (one in 25).
        return { method: 'GET', path: `/v3/plant?limit=20&q=${encodeURIComponent('café')}` }
      case 'sku': {
        // Exact, ignoring case: every other lookup is in lower case.
        const sku = skuFor(holder(hasSku) + 1)
        return { method: 'GET', path: `/v3/plant?sku=${n % 2 === 0 ? sku : sku.toLowerCase()}` }
      }
      case 'barcode':
        return { method: 'GET', path: `/v3/plant?barcode=${barcodeFor(holder(hasBarcode))}` }
      case 'sort-price':
        return { method: 'GET', path: '/v3/plant?limit=20&sort=price' }
      case 'sort-updated':
        return { method: 'GET', path: '/v3/plant?limit=20&sort=-updated' }
      case 'count':
        // A filter most plants match (about 78 % are available): beyond 10,000 the count stops at its cap.
        return { method: 'GET', path: '/v3/plant/count?status=available' }
      case 'photo':
      case 'path':
        return { method: 'GET', path: paths[Math.floor(Math.random() * paths.length)] }
      case 'healthz':
        return { method: 'GET', path: '/healthz' }
      case 'hold':
        return { method: 'GET', path: HOLD_PATHS[n % HOLD_PATHS.length] }
      case 'history-1':
      case 'history-1000':
        // The first page (20 versions, newest first) of one plant's history.
        return { method: 'GET', path: `/v3/plant/${HISTORY_PLANTS[op]}/history` }
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

/** The exact time of every 2xx answer (autocannon's own histogram keeps whole milliseconds, as coarse as a fast p50). */
function recorder (): { record: (client: unknown, status: number, size: number, ms: number) => void, figures: (results: autocannon.Result[], seconds: number) => Figures } {
  let times = new Float64Array(1 << 16)
  let count = 0
  let bytes = 0
  return {
    record: (_client, status, size, ms) => {
      if (status < 200 || status >= 300) return
      bytes += size
      if (count === times.length) {
        const bigger = new Float64Array(times.length * 2)
        bigger.set(times)
        times = bigger
      }
      times[count++] = ms
    },
    figures: (results, seconds) => {
      const sorted = times.subarray(0, count).sort()
      const sum = (f: (r: autocannon.Result) => number): number => results.reduce((n, r) => n + f(r), 0)
      return {
        rps: Math.round(sum((r) => r['2xx'] / r.duration)),
        p50: Math.round(percentile(sorted, 50) * 1000) / 1000,
        p99: Math.round(percentile(sorted, 99) * 1000) / 1000,
        requests: sum((r) => r.requests.total),
        non2xx: sum((r) => r.non2xx),
        errors: sum((r) => r.errors + r.timeouts),
        // Response bytes (headers included) of the 2xx answers: a photo file is far larger than a plant.
        bytesPerSecond: Math.round(bytes / seconds)
      }
    }
  }
}

async function measure (job: Job): Promise<Figures> {
  const main = recorder()
  const mixed = recorder()
  const mixing = job.mix?.connections ?? 0
  const instances = Array.from({ length: job.connections }, (_, c) => {
    const op = c < mixing ? job.mix!.op : job.op
    const instance = autocannon({ url: job.url, connections: 1, duration: job.seconds, headers: job.headers, requests: requestsFor(op, job.idMax, c, job.paths, job.seedOnly) })
    // Each connection's first answer is not timed: autocannon starts its clock as the instance is
    // made, and the instances made after it (each builds its request buffers) keep this process
    // from sending or reading anything until all of them exist. That first answer measured the
    // generator's own setup: the first 500-operation batch of each round was its p99.
    let first = true
    const record = c < mixing ? mixed.record : main.record
    instance.on('response', (client: unknown, status: number, size: number, ms: number) => {
      if (first) first = false
      else record(client, status, size, ms)
    })
    return instance
  })
  const results = await Promise.all(instances)
  const figures = main.figures(results.slice(mixing), job.seconds)
  return mixing > 0 ? { ...figures, mixed: mixed.figures(results.slice(0, mixing), job.seconds) } : figures
}

/**
 * The same measurement through undici's dispatcher, which hands each body over as Buffers and
 * is told to drop them. autocannon appends every body to a JS string (`req.body += data`): a
 * WebP thumb decoded as UTF-8 cost the generator more than the service spent serving it, so with
 * many different thumbs it saturated its own core while the service had most of one to spare. Only for
 * comparisons made inside one job kind: photo files against GET by id, both measured this way.
 */
async function measureBinary (job: Job): Promise<Figures> {
  const paths = job.op === 'photo' ? job.paths ?? [] : requestsFor(job.op, job.idMax, 0).map((r) => r.path!)
  const times: number[] = []
  let ok = 0
  let non2xx = 0
  let errors = 0
  let bytes = 0
  const end = performance.now() + job.seconds * 1000
  const once = (client: Client, path: string): Promise<void> => new Promise((resolve) => {
    const started = performance.now()
    let status = 0
    let size = 0
    const handler: Dispatcher.DispatchHandlers = {
      onConnect: () => {},
      onError: () => { errors++; resolve() },
      onHeaders: (statusCode, headers) => {
        status = statusCode
        for (const h of headers ?? []) size += h.length + 2
        return true
      },
      onData: (chunk) => { size += chunk.length; return true },
      onComplete: () => {
        if (status >= 200 && status < 300) {
          ok++
          bytes += size
          times.push(performance.now() - started)
        } else non2xx++
        resolve()
      }
    }
    client.dispatch({ path, method: 'GET' }, handler)
  })
  await Promise.all(Array.from({ length: job.connections }, async () => {
    const client = new Client(job.url, { pipelining: 1 })
    while (performance.now() < end) await once(client, paths[Math.floor(Math.random() * paths.length)])
    await client.close()
  }))
  times.sort((a, b) => a - b)
  const sorted = Float64Array.from(times)
  return {
    rps: Math.round(ok / job.seconds),
    p50: Math.round(percentile(sorted, 50) * 1000) / 1000,
    p99: Math.round(percentile(sorted, 99) * 1000) / 1000,
    requests: ok + non2xx,
    non2xx,
    errors,
    bytesPerSecond: Math.round(bytes / job.seconds)
  }
}

process.on('message', (job: Job) => {
  (job.binary ? measureBinary(job) : measure(job)).then(
    (figures) => process.send?.({ ok: true, figures }),
    (err) => process.send?.({ ok: false, error: String(err) })
  )
})
process.on('disconnect', () => process.exit(0))
