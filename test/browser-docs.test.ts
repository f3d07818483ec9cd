import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { chromium } from 'playwright-core'
import { listenOn } from '../scripts/lib/listening-service.js'
import { picture } from './helpers/pictures.js'

// Debian's Chromium, installed by .ci/run when missing. Without it the test says so as a skip.
const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']
const OUTPUT = new URL('../test-output/', import.meta.url).pathname

test('the docs page at /v3/docs adds a plant through "Try it out" in a real browser', {
  skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install chromium)`,
  timeout: 120_000
}, async (t) => {
  const service = await listenOn(':memory:')
  t.after(() => service.close())
  const profile = await mkdtemp(join(tmpdir(), 'plants-chromium-'))
  const browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS })
  // One hook, in this order: Node 20 runs t.after hooks first-registered first, and removing the
  // profile while Chromium still writes to it fails (ENOTEMPTY), leaving the browser (and the run) hanging.
  t.after(async () => {
    await browser.close()
    await rm(profile, { recursive: true, force: true })
  })

  const page = browser.pages()[0] ?? await browser.newPage()
  // The page must work offline: anything it asks of another origin is a defect.
  const foreign: string[] = []
  page.on('request', (request) => {
    const url = new URL(request.url())
    if (!['data:', 'blob:'].includes(url.protocol) && url.origin !== service.url) foreign.push(request.url())
  })
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  // The page's Content-Security-Policy must not block anything the page itself needs.
  page.on('console', (message) => { if (/Content Security Policy/i.test(message.text())) errors.push(message.text()) })

  await page.goto(`${service.url}/v3/docs`)
  const operation = page.locator('#operations-plant-add-plant')
  await operation.locator('.opblock-summary').click()
  await operation.getByRole('button', { name: 'Try it out' }).click()
  const body = operation.locator('textarea.body-param__text')
  await body.fill(JSON.stringify({ name: 'Tried in a browser', category: 'docs', tags: ['e2e'], status: 'available' }, null, 2))
  await operation.getByRole('button', { name: 'Execute' }).click()

  const live = operation.locator('.live-responses-table .response')
  await live.first().waitFor()
  const status = (await live.locator('.response-col_status').first().innerText()).trim()
  assert.equal(status, '200')
  const answer = JSON.parse(await live.locator('.response-col_description pre').first().innerText())
  assert.equal(answer.name, 'Tried in a browser')
  assert.deepEqual(answer.tags, ['e2e'])

  // The plant is really there, not only on the page.
  const stored = await (await fetch(`${service.url}/v3/plant/${answer.id}`)).json()
  assert.deepEqual(stored, answer)

  await mkdir(OUTPUT, { recursive: true })
  const screenshot = join(OUTPUT, 'browser-docs-add-plant.png')
  await live.first().scrollIntoViewIfNeeded()
  await page.screenshot({ path: screenshot })
  t.diagnostic(`screenshot: ${screenshot}`)
  assert.deepEqual(foreign, [], 'the docs page loads nothing from another origin')
  assert.deepEqual(errors, [])
})

test('the docs page at /v3/docs uploads a photo through "Try it out" (a file picker for the binary body)', {
  skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install chromium)`,
  timeout: 120_000
}, async (t) => {
  const service = await listenOn(':memory:')
  t.after(() => service.close())
  const plant = await (await fetch(`${service.url}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Photographed"}' })).json() as { id: number }
  const profile = await mkdtemp(join(tmpdir(), 'plants-chromium-'))
  t.after(() => rm(profile, { recursive: true, force: true }))
  const browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS })
  t.after(() => browser.close())
  const file = join(profile, 'fern.png')
  await writeFile(file, await picture('png', 3, 400))

  const page = browser.pages()[0] ?? await browser.newPage()
  await page.goto(`${service.url}/v3/docs`)
  const operation = page.locator('#operations-plant-add-plant-photo')
  await operation.locator('.opblock-summary').click()
  await operation.getByRole('button', { name: 'Try it out' }).click()
  await operation.locator('tr[data-param-name="id"] input').fill(String(plant.id))
  await operation.locator('.opblock-section-request-body select').selectOption('image/png')
  await operation.locator('input[type="file"]').setInputFiles(file)
  await operation.getByRole('button', { name: 'Execute' }).click()

  const live = operation.locator('.live-responses-table .response')
  await live.first().waitFor()
  assert.equal((await live.locator('.response-col_status').first().innerText()).trim(), '201')
  const stored = await (await fetch(`${service.url}/v3/plant/${plant.id}`)).json() as { photos: Array<{ width: number }> }
  assert.equal(stored.photos.length, 1)
  assert.equal(stored.photos[0].width, 400)
})
