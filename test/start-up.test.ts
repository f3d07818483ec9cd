import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { pngBomb } from './helpers/pictures.js'
import { ROOT } from './helpers/process.js'

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

test('the service starts without loading sharp, and the first photo upload loads it', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD, pngBomb(16).toString('base64')], { cwd: ROOT })
  assert.deepEqual(JSON.parse(stdout), { atStart: false, upload: 201, afterUpload: true })
})
