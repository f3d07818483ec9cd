import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { pngBomb } from '../helpers/pictures.js'
import { ROOT } from '../helpers/process.js'

// What a start loads. A cold start pays for every module it loads (bench/cold-start.ts), so what
// the first requests do not need waits for the request that does.

const run = promisify(execFile)

// In a process of its own: this one has loaded sharp already (the test helpers draw pictures).
const CHILD = `
import { buildApp } from './src/app.ts'
import { testConfig } from './src/config.ts'
const sharpLoaded = () => process.report.getReport().sharedObjects.some((path) => /sharp|libvips/.test(path))
const app = await buildApp(testConfig({ dataDir: ':memory:' }))
await app.ready()
const atStart = sharpLoaded()
const plant = (await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } })).json()
const upload = await app.inject({ method: 'POST', url: '/v3/plant/' + plant.id + '/photos', headers: { 'content-type': 'image/png' }, payload: Buffer.from(process.argv[1], 'base64') })
process.stdout.write(JSON.stringify({ atStart, upload: upload.statusCode, afterUpload: sharpLoaded() }))
await app.close()
`

test('the service never loads sharp: the first photo upload starts the image worker, which does', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD, pngBomb(16).toString('base64')], { cwd: ROOT })
  assert.deepEqual(JSON.parse(stdout), { atStart: false, upload: 201, afterUpload: false })
})

test('every route schema compiles: none is left for a first request once the rest are compiled after start', async (t) => {
  const app = await buildApp(testConfig({ dataDir: ':memory:' }))
  t.after(() => app.close())
  await app.ready()
  // Ready with (almost) nothing compiled: that is the point.
  assert.ok(app.lazySchemas.pending > 50, `${app.lazySchemas.pending} left to compile at ready`)
  const get = await app.inject({ method: 'GET', url: '/v3/plant/1' })
  assert.equal(get.statusCode, 404)
  assert.equal(get.json().type, '/v3/problems/not-found')
  await app.lazySchemas.compileRest()
  assert.equal(app.lazySchemas.pending, 0)
  // Compiled functions answer as lazy ones did, validation messages included.
  const bad = await app.inject({ method: 'GET', url: '/v3/plant?limit=1e1' })
  assert.equal(bad.statusCode, 400)
  assert.match(bad.json().detail, /decimal digits/)
})

// Threads of this process, from /proc (Linux): the writer thread is one of them once started.
const THREADS_CHILD = `
import { readdirSync } from 'node:fs'
import { buildApp } from './src/app.ts'
import { testConfig } from './src/config.ts'
const threads = () => readdirSync('/proc/self/task').length
const app = await buildApp(testConfig({ dataDir: process.argv[1] }))
await app.ready()
const read = await app.inject({ method: 'GET', url: '/v3/plant/1' })
await new Promise((resolve) => setTimeout(resolve, 200))
const atStart = threads()
const write = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } })
process.stdout.write(JSON.stringify({ read: read.statusCode, write: write.statusCode, added: threads() - atStart }))
await app.close()
`

test('the SQLite writer thread starts with the first write, not with the service', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plants-start-up-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', THREADS_CHILD, dir], { cwd: ROOT })
  const { read, write, added } = JSON.parse(stdout)
  assert.deepEqual({ read, write }, { read: 404, write: 200 })
  assert.ok(added > 0, 'the first write started a thread')
})
