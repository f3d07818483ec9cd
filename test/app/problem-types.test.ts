import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { PROBLEM_CODES } from '../../src/http/problems/problem.js'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'

// A problem's `type` is a link (issue 49's review: `/v3/problems/insufficient-stock` answered 404):
// every type the service can send resolves to what it means.

/** The codes src/ hands to a problem by literal (`new HttpProblem(409, 'sku-taken'`, `answerAndClose(socket, 429, 'too-many-requests'`). */
async function codesInSource (): Promise<Set<string>> {
  const codes = new Set<string>()
  const files = (await readdir('src', { recursive: true })).filter((f) => f.endsWith('.ts') && !f.includes('generated'))
  for (const file of files) {
    const text = await readFile(join('src', file), 'utf8')
    for (const [, code] of text.matchAll(/(?:HttpProblem|sendRaw|answerAndClose)\([^()]*?\b\d{3},\s*'([a-z-]+)'/g)) codes.add(code)
    for (const [, code] of text.matchAll(/\[\d{3}, '([a-z-]+)', /g)) codes.add(code)
  }
  return codes
}

test('every problem type the service can send resolves: GET its `type` answers its title and what it means', async (t) => {
  const api = await build(t, sqliteEngine)
  const emitted = await codesInSource()
  assert.ok(emitted.size > 20, `found ${emitted.size} codes in src: the scan no longer finds them`)
  for (const code of emitted) assert.ok(PROBLEM_CODES.includes(code as never), `${code} is sent but has no title or page`)
  for (const code of PROBLEM_CODES) {
    const res = await api.request({ method: 'GET', url: `/v3/problems/${code}` })
    assert.equal(res.statusCode, 200, `${code}: ${res.body}`)
    assert.match(res.headers['content-type'] as string, /^application\/json/)
    const page = res.json()
    assert.equal(page.type, `/v3/problems/${code}`)
    assert.ok(page.title.length > 0 && page.description.length > 15, `${code} says what it means`)
  }
})

test('the type of a problem actually sent resolves, with the title that problem carries', async (t) => {
  const api = await build(t, sqliteEngine)
  const plant = await api.add({ name: 'Fern' })
  for (const sent of [
    await api.request({ method: 'GET', url: '/v3/nope' }),
    await api.request({ method: 'POST', url: `/v3/plant/${plant.id}/stock/movements`, payload: { delta: -1, reason: 'sale' } })
  ]) {
    const problem = sent.json()
    const page = await api.request({ method: 'GET', url: problem.type })
    assert.equal(page.statusCode, 200, page.body)
    assert.deepEqual([page.json().type, page.json().title], [problem.type, problem.title])
  }
})

test('an unknown problem type is 404 in the contract\'s problem shape', async (t) => {
  const api = await build(t, sqliteEngine)
  const res = await api.request({ method: 'GET', url: '/v3/problems/no-such-thing' })
  assert.equal(res.statusCode, 404)
  const problem = res.json()
  assert.equal(problem.type, '/v3/problems/route-not-found')
  assert.equal(problem.status, 404)
  assert.match(problem.detail, /No problem type named no-such-thing/)
  assert.equal(typeof problem.requestId, 'string')
})

test('with READS=keys a problem type is open without a key, as the OpenAPI document is', async (t) => {
  const api = await build(t, sqliteEngine, { apiKeys: ['env-admin-key-0123456789'], readsNeedKey: true })
  assert.equal((await api.request({ method: 'GET', url: '/v3/plant' })).statusCode, 401, 'reads need a key')
  assert.equal((await api.request({ method: 'GET', url: '/v3/problems/unauthorized' })).statusCode, 200)
})
