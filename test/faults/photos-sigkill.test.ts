import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { DANGLING_PHOTO_FILES, storedPhotoFiles } from '../../src/store/sqlite/photo-writes.js'
import { startService, tempDir } from '../helpers/process.js'
import { picture } from '../helpers/pictures.js'

// kill -9 at random moments during a stream of photo uploads, on the same data folder round after
// round: every acknowledged photo must be in its plant's record with all its files, and no record
// may name a file that is not stored.

const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 6)
const UPLOADERS = 4

interface Acknowledged { plant: number, id: string, urls: Record<string, string> }

test(`SIGKILL during photo uploads, ${ROUNDS} times: every acknowledged photo survives with its files, and no record names a missing file`, async (t) => {
  const dir = tempDir('plants-photo-sigkill')
  t.after(dir.remove)
  const acknowledged: Acknowledged[] = []
  let cutOff = 0
  let beforeKills = 0
  // Pictures made up front (each upload a different one, so each has files of its own).
  const pictures = await Promise.all(Array.from({ length: 48 }, (_, i) => picture('jpeg', i, 320 + (i % 5) * 40)))
  for (let round = 0; round < ROUNDS; round++) {
    const service = await startService({ dataDir: dir.path })
    const plants: number[] = []
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${service.url}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: `r${round} p${i}` }) })
      plants.push(((await res.json()) as { id: number }).id)
    }
    // The first upload starts the image worker (a process of its own): answered before the kill
    // timer starts, so every kill lands while pictures are processed and written, not while the
    // worker is loading.
    const first = await fetch(`${service.url}/v3/plant/${plants[0]}/photos`, {
      method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: new Uint8Array(pictures[round % pictures.length])
    })
    assert.equal(first.status, 201)
    acknowledged.push({ plant: plants[0], ...(await first.json()) as { id: string, urls: Record<string, string> } })
    let killed = false
    const uploader = async (u: number): Promise<void> => {
      for (let i = 0; !killed; i++) {
        const plant = plants[(u * 2 + (i % 2)) % plants.length]
        try {
          const res = await fetch(`${service.url}/v3/plant/${plant}/photos`, {
            method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: new Uint8Array(pictures[(u * 12 + i + round * 7) % pictures.length])
          })
          if (res.status === 201) {
            acknowledged.push({ plant, ...(await res.json()) as { id: string, urls: Record<string, string> } })
            beforeKills++
          } else if (res.status === 409) await res.arrayBuffer() // the plant is full: move on
          else if (res.status === 429) {
            // One client address holds at most 3 upload places: the uploaders beyond them wait a moment.
            await res.arrayBuffer()
            await new Promise((resolve) => setTimeout(resolve, 20))
          } else assert.fail(`upload answered ${res.status}: ${await res.text()}`)
        } catch (err) {
          if (!killed) throw err
          cutOff++
        }
      }
    }
    const delay = 150 + Math.floor(Math.random() * 1500)
    const killer = new Promise<void>((resolve) => setTimeout(() => {
      killed = true
      service.child.kill('SIGKILL')
      resolve()
    }, delay))
    await Promise.all([...Array.from({ length: UPLOADERS }, (_, u) => uploader(u)), killer])
    assert.equal((await service.exited).signal, 'SIGKILL')

    const db = new Database(join(dir.path, 'catalogue.db'))
    try {
      assert.equal(db.pragma('integrity_check', { simple: true }), 'ok', `round ${round}`)
      assert.equal(db.prepare(DANGLING_PHOTO_FILES).pluck().get(), 0, `round ${round}: a record names a file that is not stored`)
      const photosOf = db.prepare<[number], string>('SELECT photos FROM plants WHERE id = ?').pluck()
      // Whole only when its chunks add up to its size.
      const files = new Map([...storedPhotoFiles(db)].map((f) => [f.name, f.bytes]))
      for (const ack of acknowledged) {
        const stored = JSON.parse(photosOf.get(ack.plant) ?? '[]') as Array<{ id: string }>
        assert.ok(stored.some((p) => p.id === ack.id), `round ${round}: acknowledged photo ${ack.id} of plant ${ack.plant} is lost`)
        for (const url of Object.values(ack.urls)) {
          const name = url.slice('/v3/photos/'.length)
          const bytes = files.get(name)
          assert.ok(bytes, `round ${round}: ${name} is lost`)
          assert.equal(`${createHash('sha256').update(bytes).digest('base64url')}.${name.split('.')[1]}`, name, `round ${round}: ${name} holds other bytes`)
        }
      }
    } finally {
      db.close()
    }
  }
  assert.ok(beforeKills > 0, 'no upload was acknowledged between the first and a kill: the kills came too early to test anything')
  t.diagnostic(`${ROUNDS} kills; ${acknowledged.length} uploads acknowledged (${beforeKills} while the kills could come) and all found with their files after restart, ` +
    `${cutOff} cut off by the kill; no dangling reference`)
})
