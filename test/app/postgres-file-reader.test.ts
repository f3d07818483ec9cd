import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { PoolClient } from 'pg'
import { FILE_CHUNK_BYTES } from '../../src/catalogue/photo.js'
import { FileReader, fileReadKey } from '../../src/store/postgres/photo-writes.js'

// PostgreSQL photo files (src/store/postgres/photo-writes.ts, FileReader): a read asks for a
// file's size and at most one chunk of its bytes; the chunks of a small file are read once and
// kept; whether the file still exists is asked on every read.

/** A client over a table of files that answers the reader's query as PostgreSQL would. */
function fakeClient (table: Map<string, Buffer>): { client: PoolClient, bytesSent: () => number } {
  let sent = 0
  const client = {
    query: async (config: { values: [string[], string[], number[], string[], number] }) => {
      const [keys, names, chunks, known, chunkBytes] = config.values
      const rows = keys.flatMap((key, i) => {
        const file = table.get(names[i])
        if (!file) return []
        const n = chunks[i]
        const chunk = n < 0 || known.includes(key) ? null : file.subarray(n * chunkBytes, (n + 1) * chunkBytes)
        sent += chunk?.length ?? 0
        return [{ key, size: file.length, chunk }]
      })
      return { rows }
    }
  }
  return { client: client as unknown as PoolClient, bytesSent: () => sent }
}

test('a read fetches the size and at most the chunk asked for; a small file\'s chunk is fetched once; a file removed meanwhile is not served from memory', async () => {
  const thumb = Buffer.alloc(10_000, 1)
  const full = Buffer.alloc(2_000_000, 2)
  const table = new Map([['t.webp', thumb], ['f.jpg', full]])
  const { client, bytesSent } = fakeClient(table)
  const reader = new FileReader()

  const sizes = await reader.read(client, [fileReadKey('t.webp'), fileReadKey('f.jpg'), fileReadKey('missing.webp')])
  assert.deepEqual(sizes.get(fileReadKey('f.jpg')), { size: 2_000_000 })
  assert.equal(sizes.has(fileReadKey('missing.webp')), false)
  assert.equal(bytesSent(), 0, 'a size (HEAD, 304) reads none of the bytes')

  const first = await reader.read(client, [fileReadKey('t.webp', 0), fileReadKey('f.jpg', 3)])
  assert.deepEqual(first.get(fileReadKey('t.webp', 0)), { size: 10_000, chunk: thumb })
  assert.deepEqual(first.get(fileReadKey('f.jpg', 3)), { size: 2_000_000, chunk: full.subarray(3 * FILE_CHUNK_BYTES, 4 * FILE_CHUNK_BYTES) })
  assert.equal(bytesSent(), 10_000 + FILE_CHUNK_BYTES, 'one chunk of the large file, not all of it')

  const again = await reader.read(client, [fileReadKey('t.webp', 0), fileReadKey('f.jpg', 3)])
  assert.deepEqual(again.get(fileReadKey('t.webp', 0))?.chunk, thumb)
  assert.equal(bytesSent(), 10_000 + 2 * FILE_CHUNK_BYTES, 'the thumb came from memory, the large file\'s chunk from the database')

  table.delete('t.webp')
  assert.equal((await reader.read(client, [fileReadKey('t.webp', 0)])).size, 0, 'removed (by any instance): not served')
})
