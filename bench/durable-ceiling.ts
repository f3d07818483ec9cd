import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { join } from 'node:path'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import pg from 'pg'
import { filterKey } from '../src/catalogue/query.js'
import { priceCents } from '../src/catalogue/price-sku-barcode.js'
import { migrate as migrateSqlite } from '../src/store/sqlite/migrations.js'
import { searchBacklog } from '../src/store/sqlite/search-backlog.js'
import { migrate as migratePostgres } from '../src/store/postgres/migrate.js'
import { searchKeyOf, searchStartsOf, textArray } from '../src/store/postgres/search-columns.js'

// The durable ceiling: bare node:http over the service's own schema (its migrations, imported),
// doing the statements a service write does (the plant, its search index entry, its tag rows, the
// status counts and the change outbox) with the same durability, committed in groups, and reading
// through plain prepared statements. No framework, validation, logging, metrics or headers of the
// service's own. It answers what storage itself allows; the service is measured as a fraction of it.
//
// DATA_DIR=<folder holding catalogue.db> (SQLite: WAL, synchronous=FULL, one transaction per turn of
// the event loop, committed in the event loop) or DATABASE_URL=postgres://… (pg, a pool of 10, one
// statement per group for the writes: one transaction, one commit, one round trip).
// Keep the statements in step with src/store/sqlite/writes.ts and src/store/postgres/*.ts.

interface Body {
  id?: number
  name: string
  category?: string | null
  tags?: string[]
  status?: string
  description?: string | null
  price?: string | null
  sku?: string | null
  barcode?: string | null
}
interface Write { body: Body, res: ServerResponse }
interface Engine {
  get (id: number, res: ServerResponse): void
  list (after: number, limit: number, res: ServerResponse): void
  /** Writes a group of creates (or of updates) in one transaction, then answers each. */
  commit (kind: 'create' | 'update', group: Write[]): Promise<void>
}

function send (res: ServerResponse, status: number, json: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) })
  res.end(json)
}
const fail = (res: ServerResponse, err: unknown): void => { send(res, 503, JSON.stringify({ status: 503, detail: String(err) })) }
// The store fields as the body has them: the ceiling does not canonicalise a price.
// A record's members between its id and its photos (PostgreSQL's outbox rows put the two around them).
const members = (b: Body): string =>
  `"name":${JSON.stringify(b.name)},"category":${JSON.stringify(b.category ?? null)},"tags":${JSON.stringify(b.tags ?? [])},"status":${JSON.stringify(b.status ?? 'available')},` +
  `"description":${JSON.stringify(b.description ?? null)},"price":${JSON.stringify(b.price ?? null)},"sku":${JSON.stringify(b.sku ?? null)},"barcode":${JSON.stringify(b.barcode ?? null)}`
const record = (id: number, b: Body, photos = '[]'): string => `{"id":${id},${members(b)},"photos":${photos}}`
const centsOf = (price: string | null | undefined): number | null => price == null ? null : priceCents(price) ?? null
// The service's cursor: base64url of JSON [fingerprint of the query, last id]; the fingerprint is echoed.
let fingerprint = ''
const cursorOf = (id: number): string => Buffer.from(JSON.stringify([fingerprint, id])).toString('base64url')
const page = (items: string[], lastId: number | undefined): string =>
  `{"items":[${items.join(',')}],"nextCursor":${lastId === undefined ? 'null' : `"${cursorOf(lastId)}"`}}`

function openSqlite (dataDir: string): Database.Database {
  const db = new Database(join(dataDir, 'catalogue.db'))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 5000')
  return db
}

type Answer = [status: number, json: string]

/** A group of creates or updates in one transaction: one commit, one fsync. Throws if the group fails. */
function sqliteWriter (db: Database.Database): (kind: 'create' | 'update', bodies: Body[]) => Answer[] {
  const s = {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    current: db.prepare('SELECT version, name, category, tags, status, price, sku, barcode FROM plants WHERE id = ?').raw(true),
    // As the service: a SKU is looked up (unique ignoring case) before it is written; a taken one is a 409.
    skuHolder: db.prepare('SELECT id FROM plants WHERE sku IS NOT NULL AND lower(sku) = ?').pluck(),
    insert: db.prepare('INSERT INTO plants (name, name_key, category, tags, status, description, price, sku, barcode, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)'),
    count: db.prepare("UPDATE sqlite_sequence SET seq = seq + ? WHERE name = 'status:' || ?"),
    // As the service: a tag row is keyed by the tag's key (filterKey).
    insertTag: db.prepare('INSERT INTO plant_tags (tag_key, tag, plant_id) VALUES (?, ?, ?)'),
    deleteTag: db.prepare('DELETE FROM plant_tags WHERE tag_key = ? AND tag = ? AND plant_id = ?'),
    insertChange: db.prepare('INSERT INTO changes (kind, plant_id, version, plant, at, index_remove, index_add) VALUES (?, ?, ?, ?, ?, ?, ?)')
  }
  // As the service: an update names the indexed columns (name, status, category, price, sku, barcode) only when they change.
  // As the service: the search index is written behind (src/store/sqlite/search-backlog.ts).
  const search = searchBacklog(db)
  const updates = new Map<number, Database.Statement>()
  const update = (changed: boolean[]): Database.Statement => {
    const [name, status, category, price, sku, barcode] = changed
    const mask = changed.reduce((m, c, i) => m + (c ? 1 << i : 0), 0)
    let statement = updates.get(mask)
    if (!statement) {
      const set = ['tags = ?', 'version = ?', 'updated_at = ?', 'description = ?', ...(name ? ['name = ?', 'name_key = ?'] : []), ...(status ? ['status = ?'] : []),
        ...(category ? ['category = ?'] : []), ...(price ? ['price = ?'] : []), ...(sku ? ['sku = ?'] : []), ...(barcode ? ['barcode = ?'] : [])]
      statement = db.prepare(`UPDATE plants SET ${set.join(', ')} WHERE id = ?`)
      updates.set(mask, statement)
    }
    return statement
  }
  return (kind, bodies) => {
    const now = Date.now()
    const counts = new Map<string, number>()
    const count = (status: string, delta: number): void => { counts.set(status, (counts.get(status) ?? 0) + delta) }
    const answers: Answer[] = []
    try {
      s.begin.run()
      for (const body of bodies) {
        const { name } = body
        const category = body.category ?? null
        const tags = body.tags ?? []
        const status = body.status ?? 'available'
        const description = body.description ?? null
        const price = centsOf(body.price)
        const sku = body.sku ?? null
        const barcode = body.barcode ?? null
        const key = name.toLowerCase()
        const holder = (): number | undefined => sku === null ? undefined : s.skuHolder.get(sku.toLowerCase()) as number | undefined
        if (kind === 'create') {
          if (holder() !== undefined) { answers.push([409, '{"status":409}']); continue }
          const id = Number(s.insert.run(name, key, category, JSON.stringify(tags), status, description, price, sku, barcode, now, now).lastInsertRowid)
          for (const tag of tags) s.insertTag.run(filterKey(tag), tag, id)
          count(status, 1)
          const json = record(id, body)
          s.insertChange.run('created', id, 1, json, now, null, key)
          answers.push([200, json])
          continue
        }
        const id = body.id!
        const current = s.current.get(id) as [number, string, string | null, string, string, number | null, string | null, string | null] | undefined
        if (!current) { answers.push([404, '{"status":404}']); continue }
        const [version, oldName, oldCategory, oldTags, oldStatus, oldPrice, oldSku, oldBarcode] = current
        // As the service: a SKU is looked up only when it changes (ignoring case).
        if (sku !== null && sku.toLowerCase() !== oldSku?.toLowerCase()) {
          const taken = holder()
          if (taken !== undefined && taken !== id) { answers.push([409, '{"status":409}']); continue }
        }
        const nameChanged = name !== oldName
        const statusChanged = status !== oldStatus
        const categoryChanged = category !== oldCategory
        const changed = [nameChanged, statusChanged, categoryChanged, price !== oldPrice, sku !== oldSku, barcode !== oldBarcode]
        const args: unknown[] = [JSON.stringify(tags), version + 1, now, description]
        if (nameChanged) args.push(name, key)
        if (statusChanged) args.push(status)
        if (categoryChanged) args.push(category)
        if (changed[3]) args.push(price)
        if (changed[4]) args.push(sku)
        if (changed[5]) args.push(barcode)
        update(changed).run(...args, id)
        const oldKey = oldName.toLowerCase()
        const reindexed = nameChanged && key !== oldKey
        if (statusChanged) { count(oldStatus, -1); count(status, 1) }
        const before = JSON.parse(oldTags) as string[]
        for (const tag of before) if (!tags.includes(tag)) s.deleteTag.run(filterKey(tag), tag, id)
        for (const tag of tags) if (!before.includes(tag)) s.insertTag.run(filterKey(tag), tag, id)
        const json = record(id, body)
        s.insertChange.run('updated', id, version + 1, json, now, reindexed ? oldKey : null, reindexed ? key : null)
        answers.push([200, json])
      }
      search.settle(bodies.length)
      for (const [status, delta] of counts) if (delta !== 0) s.count.run(delta, status)
      s.commit.run()
    } catch (err) {
      if (db.inTransaction) s.rollback.run()
      throw err
    }
    return answers
  }
}

// WRITER=thread: the commits run in a worker thread with its own connection, as the service's do,
// so the event loop reads the next group while the disk flushes; otherwise in the event loop.
function sqliteEngine (dataDir: string, inThread: boolean): Engine {
  const db = openSqlite(dataDir)
  migrateSqlite(db)
  const s = {
    get: db.prepare('SELECT id, name, category, tags, status, photos FROM plants WHERE id = ?').raw(true),
    list: db.prepare('SELECT id, name, category, tags, status, photos FROM plants WHERE id > ? ORDER BY id LIMIT ?').raw(true)
  }
  let write: (kind: 'create' | 'update', bodies: Body[]) => Promise<Answer[]>
  if (inThread) {
    const worker = new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(import.meta.url)}) })`,
      { eval: true, workerData: { dataDir } })
    write = (kind, bodies) => new Promise((resolve, reject) => {
      worker.once('message', (m: { answers?: Answer[], error?: string }) => { m.answers ? resolve(m.answers) : reject(new Error(m.error)) })
      worker.postMessage([kind, bodies])
    })
  } else {
    const writer = sqliteWriter(db)
    write = async (kind, bodies) => writer(kind, bodies)
  }
  const row = (r: unknown[]): string =>
    `{"id":${r[0] as number},"name":${JSON.stringify(r[1])},"category":${JSON.stringify(r[2])},"tags":${r[3] as string},"status":"${r[4] as string}","photos":${r[5] as string}}`
  return {
    get (id, res) {
      const r = s.get.get(id) as unknown[] | undefined
      if (r) send(res, 200, row(r))
      else send(res, 404, '{"status":404}')
    },
    list (after, limit, res) {
      const rows = s.list.all(after, limit + 1) as unknown[][]
      const more = rows.length > limit
      if (more) rows.pop()
      send(res, 200, page(rows.map(row), more ? rows[rows.length - 1][0] as number : undefined))
    },
    async commit (kind, group) {
      let answers: Answer[]
      try {
        answers = await write(kind, group.map((w) => w.body))
      } catch (err) {
        for (const w of group) fail(w.res, err)
        return
      }
      group.forEach((w, i) => send(w.res, answers[i][0], answers[i][1]))
    }
  }
}

// PostgreSQL: a group of creates is one statement. Ids are drawn from the identity's sequence
// first so each input row knows its id (the outbox record carries it); the plant with its store
// fields and search columns, its tag rows, the outbox rows under feed_head's lock, the status counts
// and the notification follow, as the service's write (src/store/postgres/group-writes.ts WRITE)
// does, for the whole group in one round trip. The outbox record is the JSON built in JavaScript
// with the id put in front, as the service's is.
const PG_CREATE = `
WITH input AS (
  SELECT nextval(pg_get_serial_sequence('plants', 'id')) AS id, u.*
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
    WITH ORDINALITY AS u (name, name_key, category, tags, status, description, price, sku, barcode, search_key, search_starts, members, n)
), p AS (
  INSERT INTO plants (id, name, name_key, category, tags, status, description, price, sku, barcode, search_key, search_starts, version, created_at, updated_at) OVERRIDING SYSTEM VALUE
  SELECT id, name, name_key, category, ARRAY(SELECT json_array_elements_text(tags::json)), status, description, price, sku, barcode, search_key, search_starts::text[], 1, $6, $6 FROM input
), t AS (
  INSERT INTO plant_tags (tag, plant_id) SELECT tag, input.id FROM input, json_array_elements_text(input.tags::json) AS tag
), head AS (
  UPDATE meta SET value = value + $7 WHERE key = 'feed_head' RETURNING value
), appended AS (
  INSERT INTO changes (seq, kind, plant_id, version, plant, at)
  SELECT head.value - $7 + input.n, 'created', input.id, 1, '{"id":' || input.id || ',' || input.members || ',"photos":[]}', $6
  FROM head, input
), counted AS (
  UPDATE meta m SET value = m.value + d.delta
  FROM head, (SELECT 'count_' || status AS key, count(*) AS delta FROM input GROUP BY status) d WHERE m.key = d.key
)
SELECT (SELECT array_agg(id ORDER BY n) FROM input) AS ids, pg_notify('plant_changes', current_schema() || ':' || value) FROM head`

// The plants holding a group's SKUs, ignoring case (the service's SKU_HOLDERS).
const SKU_HOLDERS = 'SELECT id, lower(sku) AS key FROM plants WHERE sku IS NOT NULL AND lower(sku) = ANY ($1::text[])'

// A group of updates with distinct ids is one statement; the old rows (status, for the counts) come
// from the statement's snapshot. The service locks each row first (FOR UPDATE) for other instances;
// here there is one writer.
const PG_UPDATE = `
WITH input AS (
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
    WITH ORDINALITY AS u (id, name, name_key, category, tags, status, description, price, sku, barcode, search_key, search_starts, members, n)
), old AS (
  SELECT p.id, p.status FROM plants p JOIN input USING (id)
), u AS (
  UPDATE plants p SET name = input.name, name_key = input.name_key, category = input.category,
    tags = ARRAY(SELECT json_array_elements_text(input.tags::json)), status = input.status, version = p.version + 1, updated_at = $7,
    description = input.description, price = input.price, sku = input.sku, barcode = input.barcode, search_key = input.search_key, search_starts = input.search_starts::text[]
  FROM input WHERE p.id = input.id
  RETURNING p.id, p.version, p.photos, input.n
), dropped AS (
  DELETE FROM plant_tags pt USING input
  WHERE pt.plant_id = input.id AND pt.tag <> ALL (ARRAY(SELECT json_array_elements_text(input.tags::json)))
), added AS (
  INSERT INTO plant_tags (tag, plant_id)
  SELECT tag, input.id FROM input JOIN old USING (id), json_array_elements_text(input.tags::json) AS tag ON CONFLICT DO NOTHING
), head AS (
  UPDATE meta SET value = value + (SELECT count(*) FROM u) WHERE key = 'feed_head' RETURNING value
), appended AS (
  INSERT INTO changes (seq, kind, plant_id, version, plant, at)
  SELECT head.value - (SELECT count(*) FROM u) + row_number() OVER (ORDER BY u.n), 'updated', u.id, u.version,
    '{"id":' || u.id || ',' || input.members || ',"photos":' || u.photos || '}', $7
  FROM head, u JOIN input ON input.n = u.n
), counted AS (
  UPDATE meta m SET value = m.value + d.delta
  FROM head, (SELECT 'count_' || s AS key, sum(v) AS delta FROM (
    SELECT status, 1 FROM input WHERE id IN (SELECT id FROM old) UNION ALL SELECT status, -1 FROM old) AS c (s, v) GROUP BY s) d
  WHERE m.key = d.key AND d.delta <> 0
)
SELECT (SELECT json_agg(json_build_array(id, version, photos::json) ORDER BY n) FROM u) AS done, pg_notify('plant_changes', current_schema() || ':' || value) FROM head`

async function postgresEngine (connectionString: string): Promise<Engine> {
  await migratePostgres({ connectionString })
  const INT8 = 20
  const types = { getTypeParser: ((oid: number, format?: 'text' | 'binary') => oid === INT8 ? Number : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'] }
  const pool = new pg.Pool({ connectionString, max: 10, types })
  const GET = 'SELECT id, name, category, tags, status, photos FROM plants WHERE id = $1'
  const LIST = 'SELECT id, name, category, tags, status, photos FROM plants WHERE id > $1 ORDER BY id LIMIT $2'
  interface Row { id: number, name: string, category: string | null, tags: string[], status: string, photos: string }
  const row = (r: Row): string => record(r.id, r, r.photos)
  return {
    get (id, res) {
      pool.query<Row>({ name: 'get', text: GET, values: [id] }).then(({ rows }) => {
        if (rows[0]) send(res, 200, row(rows[0]))
        else send(res, 404, '{"status":404}')
      }, (err) => fail(res, err))
    },
    list (after, limit, res) {
      pool.query<Row>({ name: 'list', text: LIST, values: [after, limit + 1] }).then(({ rows }) => {
        const more = rows.length > limit
        if (more) rows.pop()
        send(res, 200, page(rows.map(row), more ? rows[rows.length - 1].id : undefined))
      }, (err) => fail(res, err))
    },
    async commit (kind, all) {
      const now = Date.now()
      const columns = (g: Write[]): unknown[] => [
        g.map((w) => w.body.name), g.map((w) => w.body.name.toLowerCase()), g.map((w) => w.body.category ?? null),
        g.map((w) => JSON.stringify(w.body.tags ?? [])), g.map((w) => w.body.status ?? 'available')]
      // The store fields and the search columns ($8 to $14), as the service computes them.
      const more = (g: Write[]): unknown[] => [
        g.map((w) => w.body.description ?? null), g.map((w) => centsOf(w.body.price)), g.map((w) => w.body.sku ?? null), g.map((w) => w.body.barcode ?? null),
        g.map((w) => searchKeyOf(w.body.name)), g.map((w) => textArray(searchStartsOf(w.body.name))), g.map((w) => members(w.body))]
      try {
        // As the service: the plants holding the SKUs the group sets, one query, before it writes; a taken one is a 409.
        const skus = [...new Set(all.flatMap((w) => typeof w.body.sku === 'string' ? [w.body.sku.toLowerCase()] : []))]
        const holders = new Map<string, number>()
        if (skus.length > 0) {
          const { rows } = await pool.query<{ id: number, key: string }>({ name: 'sku-holders', text: SKU_HOLDERS, values: [skus] })
          for (const r of rows) holders.set(r.key, Number(r.id))
        }
        const group = all.filter((w) => {
          const holder = typeof w.body.sku === 'string' ? holders.get(w.body.sku.toLowerCase()) : undefined
          if (holder === undefined || holder === w.body.id) return true
          send(w.res, 409, '{"status":409}')
          return false
        })
        if (group.length === 0) return
        if (kind === 'create') {
          const { rows } = await pool.query<{ ids: number[] }>({ name: 'create', text: PG_CREATE, values: [...columns(group), now, group.length, ...more(group)] })
          group.forEach((w, i) => send(w.res, 200, record(Number(rows[0].ids[i]), w.body)))
          return
        }
        // One statement per run of distinct ids: an UPDATE … FROM changes a row once, however often it is named.
        for (let from = 0; from < group.length;) {
          const seen = new Set<number>()
          let to = from
          while (to < group.length && !seen.has(group[to].body.id!)) seen.add(group[to++].body.id!)
          const part = group.slice(from, to)
          const { rows } = await pool.query<{ done: Array<[number, number, unknown]> | null }>(
            { name: 'update', text: PG_UPDATE, values: [part.map((w) => w.body.id), ...columns(part), now, ...more(part)] })
          const done = new Map((rows[0]?.done ?? []).map(([id, , photos]) => [Number(id), JSON.stringify(photos)]))
          for (const w of part) {
            const photos = done.get(w.body.id!)
            if (photos === undefined) send(w.res, 404, '{"status":404}')
            else send(w.res, 200, record(w.body.id!, w.body, photos))
          }
          from = to
        }
      } catch (err) {
        for (const w of all) if (!w.res.headersSent) fail(w.res, err)
      }
    }
  }
}

if (!isMainThread) {
  // The writer thread of WRITER=thread.
  const write = sqliteWriter(openSqlite((workerData as { dataDir: string }).dataDir))
  parentPort!.on('message', ([kind, bodies]: ['create' | 'update', Body[]]) => {
    try {
      parentPort!.postMessage({ answers: write(kind, bodies) })
    } catch (err) {
      parentPort!.postMessage({ error: String(err) })
    }
  })
} else {
  const engine = process.env.DATABASE_URL ? await postgresEngine(process.env.DATABASE_URL) : sqliteEngine(process.env.DATA_DIR!, process.env.WRITER === 'thread')
  serve(engine)
}

function serve (engine: Engine): void {
  // Group commit: the writes read in one turn of the event loop form one group, committed in that
  // turn's check phase; one group in flight at a time, the next gathers meanwhile.
  const queues = { create: [] as Write[], update: [] as Write[] }
  let scheduled = false
  let inFlight = false
  function schedule (): void {
    if (scheduled || inFlight) return
    scheduled = true
    setImmediate(flush)
  }
  function flush (): void {
    scheduled = false
    const kind = queues.create.length > 0 ? 'create' : 'update'
    const group = queues[kind]
    if (group.length === 0) return
    queues[kind] = []
    inFlight = true
    void engine.commit(kind, group).finally(() => {
      inFlight = false
      if (queues.create.length + queues.update.length > 0) schedule()
    })
  }

  function readBody (req: IncomingMessage, then: (body: Body) => void): void {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => then(JSON.parse(Buffer.concat(chunks).toString()) as Body))
  }

  const server = createServer((req, res) => {
    const url = req.url ?? '/'
    if (req.method === 'POST' && url === '/v3/plant') {
      readBody(req, (body) => { queues.create.push({ body, res }); schedule() })
    } else if (req.method === 'PUT' && url === '/v3/plant') {
      readBody(req, (body) => { queues.update.push({ body, res }); schedule() })
    } else if (req.method === 'GET' && url.startsWith('/v3/plant/')) {
      engine.get(Number(url.slice('/v3/plant/'.length)), res)
    } else if (req.method === 'GET' && url.startsWith('/v3/plant')) {
      const query = new URL(url, 'http://x').searchParams
      const cursor = query.get('cursor')
      const parts: [string, number] = cursor ? JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [string, number] : ['', 0]
      fingerprint = parts[0]
      engine.list(parts[1], Number(query.get('limit') ?? 50), res)
    } else {
      send(res, 404, '{"status":404}')
    }
  })

  server.keepAliveTimeout = 5_000
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    const address = server.address()
    process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`)
  })
  process.on('SIGTERM', () => { server.close(); server.closeAllConnections() })
}
