import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { freshDatabase, postgresEngine, type Scratch } from '../helpers/postgres-engine.js'
import { picture } from '../helpers/pictures.js'
import { startInstance, type Instance } from '../helpers/scale.js'

// Photos on two service processes sharing one PostgreSQL database, as behind a load balancer.

const post = (url: string, body: object) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const upload = (url: string, bytes: Buffer) => fetch(url, { method: 'POST', headers: { 'content-type': 'image/png' }, body: new Uint8Array(bytes) })

describe('photos across PostgreSQL instances', { skip: postgresEngine.skip, timeout: 300_000 }, () => {
  let db: Scratch
  let a: Instance
  let b: Instance

  before(async () => {
    db = await freshDatabase()
    a = await startInstance({ DATABASE_URL: db.url })
    b = await startInstance({ DATABASE_URL: db.url })
  })

  after(async () => {
    await Promise.all([a, b].filter(Boolean).map((i) => i.stop()))
    await db?.drop()
  })

  it('a photo uploaded through one instance is in the record and served, with its ETag, by the other; a delete through the other removes its files for both', async () => {
    const plant = await (await post(`${a.url}/v3/plant`, { name: 'Monstera' })).json() as { id: number }
    const res = await upload(`${a.url}/v3/plant/${plant.id}/photos`, await picture('png', 11, 700))
    assert.equal(res.status, 201)
    const photo = await res.json() as { id: string, urls: Record<string, string> }
    const read = await (await fetch(`${b.url}/v3/plant/${plant.id}`)).json() as { photos: unknown[] }
    assert.deepEqual(read.photos, [photo])
    for (const url of Object.values(photo.urls)) {
      const fromA = await fetch(`${a.url}${url}`)
      const fromB = await fetch(`${b.url}${url}`)
      assert.equal(fromB.status, 200, url)
      assert.deepEqual(Buffer.from(await fromB.arrayBuffer()), Buffer.from(await fromA.arrayBuffer()))
      assert.equal(fromB.headers.get('etag'), fromA.headers.get('etag'))
      assert.equal((await fetch(`${b.url}${url}`, { headers: { 'if-none-match': fromA.headers.get('etag')! } })).status, 304)
    }
    assert.equal((await fetch(`${b.url}/v3/plant/${plant.id}/photos/${photo.id}`, { method: 'DELETE' })).status, 204)
    for (const url of Object.values(photo.urls)) assert.equal((await fetch(`${a.url}${url}`)).status, 404, url)
  })

  it('one picture uploaded through one instance while its other copy is deleted through the other, 12 times: every photo left has all its files', async () => {
    const picture1 = await picture('png', 12, 500)
    const x = await (await post(`${a.url}/v3/plant`, { name: 'x' })).json() as { id: number }
    const y = await (await post(`${b.url}/v3/plant`, { name: 'y' })).json() as { id: number }
    let previous = await (await upload(`${b.url}/v3/plant/${y.id}/photos`, picture1)).json() as { id: string }
    for (let round = 0; round < 12; round++) {
      // x gains a copy through a while y's copy (the same files) goes through b: the files' count
      // passes through 1 and must never reach 0 while x's copy names them.
      const [added, removed] = await Promise.all([
        upload(`${a.url}/v3/plant/${round % 2 ? y.id : x.id}/photos`, picture1),
        fetch(`${b.url}/v3/plant/${round % 2 ? x.id : y.id}/photos/${previous.id}`, { method: 'DELETE' })
      ])
      assert.equal(added.status, 201)
      assert.equal(removed.status, 204)
      previous = await added.json() as { id: string }
      const owner = await (await fetch(`${b.url}/v3/plant/${round % 2 ? y.id : x.id}`)).json() as { photos: Array<{ urls: Record<string, string> }> }
      assert.equal(owner.photos.length, 1)
      for (const url of Object.values(owner.photos[0].urls)) assert.equal((await fetch(`${a.url}${url}`)).status, 200, `round ${round}: ${url}`)
    }
  })
})
