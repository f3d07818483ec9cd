import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { checkPatch, checkPlant } from '../../src/cli/validate-row.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Writes as a new user met them (review findings 21, 22, 24, 25): a record read and sent back,
// tags the filters take for one, a description with white space at an end, a price sent as a number.

const PRICE_FIX = 'must be a string or null: send the price as a decimal string, e.g. "12.50"'
const SAME_TAG = 'must not repeat a tag ignoring the case of A–Z, as filters do (items 0 and 1, "BIG" and "big", are one tag)'

test('an import row (JSON Lines, CSV) is checked with the same words: a number price says how to send it; BIG and big are one tag', () => {
  assert.deepEqual(checkPlant({ name: 'Fern', price: 12 }), { ok: false, reason: `/price ${PRICE_FIX}` })
  assert.deepEqual(checkPatch({ price: 12.5 }), { ok: false, reason: `/price ${PRICE_FIX}` })
  assert.deepEqual(checkPlant({ name: 'Fern', tags: ['BIG', 'big'] }), { ok: false, reason: `/tags ${SAME_TAG}` })
  assert.deepEqual(checkPatch({ tags: ['BIG', 'big'] }), { ok: false, reason: `/tags ${SAME_TAG}` })
  const kept = checkPlant({ name: 'Fern', description: ' leading and trailing\n' })
  assert.equal(kept.ok && kept.fields.description, ' leading and trailing\n')
})

for (const engine of ENGINES) {
  describe(`writes: answers a new user needs, on ${engine.name}`, { skip: engine.skip }, () => {
    test('tags equal ignoring the case of A–Z are refused on POST, PUT, PATCH and in a batch; other letters\' case is not folded, as the filters', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', tags: ['big'] })
      const tags = ['BIG', 'big']
      const writes = [
        { method: 'POST' as const, url: '/v3/plant', payload: { name: 'Fern', tags }, status: 405, path: '/tags' },
        { method: 'PUT' as const, url: '/v3/plant', payload: { id: plant.id, name: 'Fern', tags }, status: 400, path: '/tags' },
        { method: 'PATCH' as const, url: `/v3/plant/${plant.id}`, payload: { tags }, status: 400, path: '/tags' },
        { method: 'POST' as const, url: '/v3/plant/batch', payload: { operations: [{ op: 'create', plant: { name: 'Fern', tags } }] }, status: 400, path: '/operations/0/plant/tags' }
      ]
      for (const { status, path, ...write } of writes) {
        const res = await request(write)
        assert.equal(res.statusCode, status, `${write.method} ${write.url}: ${res.body}`)
        assert.deepEqual(res.json().errors, [{ path, message: SAME_TAG }], `${write.method} ${write.url}`)
      }
      assert.deepEqual((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().tags, ['big'], 'nothing changed')
      // An exact repeat is the rule it always was; É and é are two tags to the filters, so both may be given.
      const repeated = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern', tags: ['a', 'a'] } })
      assert.deepEqual(repeated.json().errors, [{ path: '/tags', message: 'must not repeat a value (items 0 and 1 are equal)' }])
      assert.deepEqual((await add({ name: 'Fern', tags: ['É', 'é', 'Big'] })).tags, ['É', 'é', 'Big'])
    })

    test('a description is stored exactly as sent, white space at either end included; white space alone is still refused', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', description: ' leading' })
      assert.equal(plant.description, ' leading')
      const patched = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { description: 'Two lines.\nThe end.\n' } })
      assert.equal(patched.json().description, 'Two lines.\nThe end.\n')
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().description, 'Two lines.\nThe end.\n')
      const blank = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern', description: ' \n ' } })
      assert.deepEqual(blank.json().errors, [{ path: '/description', message: 'must not be only white space' }])
      const lone = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern', description: ' \ud800' } })
      assert.deepEqual(lone.json().errors, [{ path: '/description', message: 'must not hold a lone UTF-16 surrogate' }])
    })

    test('a price sent as a JSON number is told to be sent as a decimal string, on POST, PATCH and in a batch', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const post = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern', price: 12 } })
      assert.deepEqual(post.json().errors, [{ path: '/price', message: PRICE_FIX }])
      assert.equal(post.json().detail, `/price ${PRICE_FIX}`)
      const patch = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { price: 12.5 } })
      assert.deepEqual(patch.json().errors, [{ path: '/price', message: PRICE_FIX }])
      const batch = await request({ method: 'POST', url: '/v3/plant/batch', payload: { operations: [{ op: 'patch', id: plant.id, patch: { price: 3 } }] } })
      assert.deepEqual(batch.json().errors, [{ path: '/operations/0/patch/price', message: PRICE_FIX }])
    })

    test('a plant read and sent back whole is told which members are read-only, and where photos are changed (their order included)', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const res = await request({ method: 'PUT', url: '/v3/plant', payload: plant })
      assert.equal(res.statusCode, 400)
      const photos = res.json().errors.find((e: { path: string }) => e.path === '/photos')
      assert.match(photos.message, /^is read-only: send the plant without photos, createdAt, updatedAt and version;/)
      assert.match(photos.message, /reorder them with PUT \/v3\/plant\/\{id\}\/photos\/order/)
    })
    test('a 412 names the current ETag; an If-Match without quotes or a weak one is told what is wrong with it, even when it names the current version', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' } })
      const current = `"${plant.id}.2"`
      const writes = [
        (ifMatch: string) => request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { name: 'x' }, headers: { 'if-match': ifMatch } }),
        (ifMatch: string) => request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'x' }, headers: { 'if-match': ifMatch } }),
        (ifMatch: string) => request({ method: 'DELETE', url: `/v3/plant/${plant.id}`, headers: { 'if-match': ifMatch } }),
        (ifMatch: string) => request({ method: 'POST', url: `/v3/plant/${plant.id}/revert`, payload: { version: 1 }, headers: { 'if-match': ifMatch } })
      ]
      const cases: Array<[string, string]> = [
        [`"${plant.id}.1"`, `If-Match does not match the current ETag of the plant, ${current}`],
        [`${plant.id}.2`, `If-Match ${plant.id}.2 is not an ETag: an ETag is in double quotes, as the ETag header gives it (If-Match: "${plant.id}.2"); the plant's current ETag is ${current}`],
        [`W/"${plant.id}.2"`, `If-Match W/"${plant.id}.2" is a weak ETag, which a write never accepts: send the ETag without W/ (If-Match: "${plant.id}.2"); the plant's current ETag is ${current}`]
      ]
      for (const write of writes) {
        for (const [ifMatch, detail] of cases) {
          const res = await write(ifMatch)
          assert.equal(res.statusCode, 412, `${ifMatch}: ${res.body}`)
          assert.equal(res.json().detail, detail)
          assert.equal(res.headers.etag, current)
          assert.equal(res.json().current.name, 'Fern', 'nothing changed')
        }
      }
    })
  })
}
