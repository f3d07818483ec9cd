import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { plantFor } from './plants.js'

// The ceiling: what bare node:http answers on this machine for the same four requests, with no
// validation, no persistence and no framework. The service is measured as a fraction of it.

interface Plant { id: number, name: string, category: string | null, tags: string[], status: string, description: string | null, price: string | null, sku: string | null, barcode: string | null, photos: [] }
/** A record of the body's fields, as sent (no checks: the ceiling does no work of the service's). */
const recordOf = (id: number, b: any): Plant => ({ id, name: b.name, category: b.category ?? null, tags: b.tags ?? [], status: b.status ?? 'available', description: b.description ?? null, price: b.price ?? null, sku: b.sku ?? null, barcode: b.barcode ?? null, photos: [] })

const plants = new Map<number, Plant>()
let lastId = 0
const preload = Number(process.env.PRELOAD ?? 0)
for (let i = 0; i < preload; i++) {
  const id = ++lastId
  plants.set(id, recordOf(id, plantFor(i)))
}

function send (res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) })
  res.end(json)
}

function readBody (req: IncomingMessage, then: (body: any) => void): void {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => then(JSON.parse(Buffer.concat(chunks).toString())))
}

const server = createServer((req, res) => {
  const url = req.url ?? '/'
  if (req.method === 'POST' && url === '/v3/plant') {
    readBody(req, (b) => {
      const plant = recordOf(++lastId, b)
      plants.set(plant.id, plant)
      send(res, 200, plant)
    })
  } else if (req.method === 'PUT' && url === '/v3/plant') {
    readBody(req, (b) => {
      if (!plants.has(b.id)) return send(res, 404, { status: 404 })
      const plant = recordOf(b.id, b)
      plants.set(plant.id, plant)
      send(res, 200, plant)
    })
  } else if (req.method === 'GET' && url.startsWith('/v3/plant/')) {
    const plant = plants.get(Number(url.slice('/v3/plant/'.length)))
    if (plant) send(res, 200, plant)
    else send(res, 404, { status: 404 })
  } else if (req.method === 'GET' && url.startsWith('/v3/plant')) {
    // The service's cursor: base64url of JSON [fingerprint of the query, last id]; ids are dense, so a page is O(limit).
    const query = new URL(url, 'http://x').searchParams
    const limit = Number(query.get('limit') ?? 50)
    const cursor = query.get('cursor')
    const parts: [string, number] = cursor ? JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [string, number] : ['', 0]
    let id = parts[1]
    const items: Plant[] = []
    while (items.length < limit && id < lastId) {
      const plant = plants.get(++id)
      if (plant) items.push(plant)
    }
    const more = id < lastId
    send(res, 200, { items, nextCursor: more ? Buffer.from(JSON.stringify([parts[0], id])).toString('base64url') : null })
  } else {
    send(res, 404, { status: 404 })
  }
})

server.keepAliveTimeout = 5_000
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`)
})
process.on('SIGTERM', () => { server.close(); server.closeAllConnections() })
