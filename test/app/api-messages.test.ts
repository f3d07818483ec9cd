import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { checkPlant } from '../../src/cli/validate-row.js'
import { MAX_FIELD_ERRORS } from '../../src/http/error-handler.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { csv, plants } from '../../scripts/lib/cli-harness.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

const MAX_ID = String(Number.MAX_SAFE_INTEGER)

for (const engine of ENGINES) {
  describe(`messages that say the fix, on ${engine.name}`, { skip: engine.skip }, () => {
    test('a status outside the enumeration lists the allowed values, once, in bodies and in the query', async (t) => {
      const { request } = await build(t, engine)
      for (const status of ['gone', null, 5]) {
        const res = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern', status } })
        assert.equal(res.statusCode, 405)
        assert.deepEqual(res.json().errors, [{ path: '/status', message: 'must be one of available, pending, sold' }], `status ${String(status)}`)
      }
      const listed = await request({ method: 'GET', url: '/v3/plant?status=gone' })
      assert.equal(listed.json().detail, 'querystring /status/0 must be one of available, pending, sold')
    })

    test(`a body breaking a rule thousands of times is answered with the first ${MAX_FIELD_ERRORS} errors and a count of the rest, not one error each`, async (t) => {
      const { request } = await build(t, engine)
      // 15,000 wrong tags in 60 KB made a 1.2 MB answer (and as long a log line) before the cap.
      const payload = `{"name":"x","tags":[${Array(15_000).fill('1.5').join(',')}]}`
      const res = await request({ method: 'POST', url: '/v3/plant', headers: { 'content-type': 'application/json' }, payload })
      assert.equal(res.statusCode, 405)
      assert.equal(res.json().errors.length, MAX_FIELD_ERRORS)
      assert.match(res.json().detail, /; and \d+ more errors like these$/)
      assert.ok(res.body.length < 8 * 1024, `${res.body.length} bytes`)
    })

    test('an id too large says the largest one, in the path and in a PUT body', async (t) => {
      const { request } = await build(t, engine)
      for (const id of ['9007199254740992', '99999999999999999999999']) {
        const res = await request({ method: 'GET', url: `/v3/plant/${id}` })
        assert.equal(res.statusCode, 400)
        assert.equal(res.json().detail, `/id must be at most ${MAX_ID}`, id)
        assert.match(res.json().type, /invalid-id$/)
      }
      const put = await request({ method: 'PUT', url: '/v3/plant', payload: { id: Number.MAX_SAFE_INTEGER + 1, name: 'Fern' } })
      assert.equal(put.statusCode, 400)
      assert.equal(put.json().detail, `/id must be at most ${MAX_ID}`)
      const limit = await request({ method: 'GET', url: '/v3/plant?limit=501' })
      assert.equal(limit.json().detail, 'querystring /limit must be at most 500')
      const changes = await request({ method: 'GET', url: '/v3/plant/changes?limit=1001' })
      assert.equal(changes.json().detail, 'querystring /limit must be at most 1000')
    })

    test('an empty name gets one message, and each text rule its own words', async (t) => {
      const { request } = await build(t, engine)
      const cases: Array<[Record<string, unknown>, Array<{ path: string, message: string }>]> = [
        [{ name: '' }, [{ path: '/name', message: 'must not be empty' }]],
        [{ name: ' \t ' }, [{ path: '/name', message: 'must not be only white space' }]],
        [{ name: 'x'.repeat(201) }, [{ path: '/name', message: 'must be at most 200 characters' }]],
        [{ name: 12 }, [{ path: '/name', message: 'must be a string' }]],
        [{ name: 'lone \ud800' }, [{ path: '/name', message: 'must not hold a lone UTF-16 surrogate' }]],
        [{ name: 'X', category: 7 }, [{ path: '/category', message: 'must be a string or null' }]],
        [{ name: 'X', tags: ['a', 'a'] }, [{ path: '/tags', message: 'must not repeat a value (items 0 and 1 are equal)' }]],
        [{ name: 'X', tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, [{ path: '/tags', message: 'must have at most 20 items' }]]
      ]
      for (const [payload, errors] of cases) {
        const res = await request({ method: 'POST', url: '/v3/plant', payload })
        assert.equal(res.statusCode, 405)
        assert.deepEqual(res.json().errors, errors, JSON.stringify(payload))
      }
    })

    test('white space at either end of a name, category or tag is refused, not trimmed, on POST, PUT and in the filters', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', category: 'indoor', tags: ['green'] })
      const edge = 'must not begin or end with white space'
      const bodies: Array<[Record<string, unknown>, string]> = [
        [{ name: ' Fern' }, '/name'], [{ name: 'Fern\n' }, '/name'], [{ name: 'Fern\u00a0' }, '/name'],
        [{ name: 'Fern', category: 'indoor ' }, '/category'], [{ name: 'Fern', tags: ['green', '\tlarge'] }, '/tags/1']
      ]
      for (const [body, path] of bodies) {
        const post = await request({ method: 'POST', url: '/v3/plant', payload: body })
        assert.equal(post.statusCode, 405)
        assert.deepEqual(post.json().errors, [{ path, message: edge }], JSON.stringify(body))
        const put = await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, ...body } })
        assert.equal(put.statusCode, 400)
        assert.deepEqual(put.json().errors, [{ path, message: edge }], JSON.stringify(body))
      }
      for (const query of ['tag=%20green', 'category=indoor%20']) {
        const res = await request({ method: 'GET', url: `/v3/plant?${query}` })
        assert.equal(res.statusCode, 400, query)
        assert.match(res.json().detail, /must not begin or end with white space/)
      }
      // Inner white space is text like any other, and stored exactly as sent.
      const inner = await add({ name: 'Monstera  deliciosa', category: 'large indoor', tags: ['two words'] })
      assert.equal(inner.name, 'Monstera  deliciosa')
      const stored = await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.deepEqual(stored.json(), plant, 'the refused writes changed nothing')
    })

    test('a control character (a tab, a line break, U+0000) in a category or tag is refused saying so; a name keeps any text', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', category: 'indoor', tags: ['green'] })
      const control = 'must not hold a control character (a tab, a line break, U+0000–U+001F, U+007F): a label is one line of text'
      const bodies: Array<[Record<string, unknown>, string]> = [
        [{ name: 'Fern', category: 'in\tdoor' }, '/category'],
        [{ name: 'Fern', category: 'in\u0000door' }, '/category'],
        [{ name: 'Fern', tags: ['ok', 'two\nlines'] }, '/tags/1'],
        [{ name: 'Fern', tags: ['bell\u0007'] }, '/tags/0'],
        [{ name: 'Fern', tags: ['del\u007f'] }, '/tags/0']
      ]
      for (const [body, path] of bodies) {
        const post = await request({ method: 'POST', url: '/v3/plant', payload: body })
        assert.equal(post.statusCode, 405)
        assert.deepEqual(post.json().errors, [{ path, message: control }], JSON.stringify(body))
        const patch = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: body, headers: { 'content-type': 'application/merge-patch+json' } })
        assert.equal(patch.statusCode, 400)
        assert.deepEqual(patch.json().errors, [{ path, message: control }], JSON.stringify(body))
      }
      // White space at an end is said as before, whatever else the label holds.
      const edge = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern', category: 'indoor\t' } })
      assert.deepEqual(edge.json().errors, [{ path: '/category', message: 'must not begin or end with white space' }])
      assert.equal((await add({ name: 'Fern\tline' })).name, 'Fern\tline', 'a name is stored exactly as sent')
      assert.deepEqual((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json(), plant, 'the refused writes changed nothing')
    })
  })
}

describe('the same rule on import', () => {
  test('a CSV or JSON Lines row with white space at either end of a field is reported with the API\'s words, and not stored', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'plants-text-'))
    t.after(() => rm(dir, { recursive: true, force: true }))
    const csvFile = join(dir, 'plants.csv')
    await writeFile(csvFile, csv('Fern,indoor,green,available', ' Monstera,indoor,,', 'Olive,tree ,,', 'Cactus,,spiky| small,'))
    const jsonlFile = join(dir, 'plants.jsonl')
    await writeFile(jsonlFile, '{"name":"Palm"}\n{"name":"Palm "}\n')
    const dataDir = join(dir, 'data')
    const fromCsv = await plants(['import', '--create', csvFile, '--data-dir', dataDir])
    assert.equal(fromCsv.code, 1, 'refused rows make the exit status 1')
    for (const report of [
      `${csvFile}:3: /name must not begin or end with white space`,
      `${csvFile}:4: /category must not begin or end with white space`,
      `${csvFile}:5: /tags/1 must not begin or end with white space`
    ]) assert.ok(fromCsv.stderr.includes(report), `reports ${report}\n${fromCsv.stderr}`)
    const fromJsonl = await plants(['import', jsonlFile, '--data-dir', dataDir])
    assert.ok(fromJsonl.stderr.includes(`${jsonlFile}:2: /name must not begin or end with white space`), fromJsonl.stderr)
    const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
    t.after(() => store.close())
    assert.deepEqual((await store.list({ afterId: 0, limit: 100 })).map((p) => p.name), ['Fern', 'Palm'])
    assert.deepEqual(checkPlant({ name: 'Fern ' }), { ok: false, reason: '/name must not begin or end with white space' })
  })
})
