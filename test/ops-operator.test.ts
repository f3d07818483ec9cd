import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build } from './helpers/app.js'
import { sqliteEngine } from './helpers/engines.js'

// What an operator meets when installing and running the service by hand.

describe('operator findings', () => {
  test('a scrape of /metrics without a key is told that this resource needs one, not that "writes" do', async (t) => {
    const { app } = await build(t, sqliteEngine, { apiKeys: ['scrape-key'] })
    const res = await app.inject({ method: 'GET', url: '/metrics' })
    assert.equal(res.statusCode, 401)
    assert.equal(res.json().detail, 'This resource needs an API key: send Authorization: Bearer <key> or api_key: <key>')
    const write = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' } })
    assert.equal(write.json().detail, 'Writes need an API key: send Authorization: Bearer <key> or api_key: <key>')
  })
})
