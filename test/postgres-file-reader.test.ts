import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { PoolClient } from 'pg'
import { FileReader } from '../src/store/postgres/photo-writes.js'

// PostgreSQL photo files: the bytes of a small file are read once and kept; whether it still
// exists is asked on every read (src/store/postgres/photo-writes.ts, FileReader).

/** A client over a table of files that answers the reader's query as PostgreSQL would. */
function fakeClient (table: Map<string, Buffer>): { client: PoolClient, bytesSent: () => number } {
  let sent = 0
  const client = {
    query: async (config: { values: [string[], string[]] }) => {
      const [names, known] = config.values
      const rows = names.filter((n) => table.has(n)).map((name) => {
        const bytes = known.includes(name) ? null : table.get(name)!
        sent += bytes?.length ?? 0
        return { name, bytes }
      })
      return { rows }
    }
  }
  return { client: client as unknown as PoolClient, bytesSent: () => sent }
}

test('a small file\'s bytes are fetched once; a file removed meanwhile is not served from memory; a large file is fetched every time', async () => {
  const thumb = Buffer.alloc(10_000, 1)
  const full = Buffer.alloc(2_000_000, 2)
  const table = new Map([['t.webp', thumb], ['f.jpg', full]])
  const { client, bytesSent } = fakeClient(table)
  const reader = new FileReader()

  const first = await reader.read(client, ['t.webp', 'f.jpg', 'missing.webp'])
  assert.deepEqual([...first.keys()].sort(), ['f.jpg', 't.webp'])
  assert.equal(bytesSent(), 2_010_000)
  const again = await reader.read(client, ['t.webp', 'f.jpg'])
  assert.deepEqual(again.get('t.webp'), thumb)
  assert.deepEqual(again.get('f.jpg'), full)
  assert.equal(bytesSent(), 4_010_000, 'the thumb\'s bytes came from memory, the full file\'s from the database')

  table.delete('t.webp')
  assert.equal((await reader.read(client, ['t.webp'])).has('t.webp'), false, 'removed (by any instance): not served')
})
