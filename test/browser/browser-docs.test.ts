import assert from 'node:assert/strict'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { listenOn, type ListeningService } from '../../scripts/lib/listening-service.js'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'
import { picture } from '../helpers/pictures.js'
import { NO_CHROMIUM, OUTPUT, sharedBrowser } from '../helpers/staff-page.js'

// Debian's Chromium, installed by .ci/run when missing. Without it the test says so as a skip.
// The browser tests share one service and the process's Chromium (a context of its own for each
// test): neither needs an empty catalogue, and starting them again for each test cost more than the test.
let shared: ListeningService | undefined
const browser = sharedBrowser()
before(async () => {
  if (NO_CHROMIUM) return
  shared = await listenOn(':memory:')
})
after(async () => { await shared?.close() })

test('the docs page and the OpenAPI document speak for the service: its own logo and icon (not Fastify\'s or Swagger\'s), and no pointer to documents a user of the package lacks', async (t) => {
  const { app } = await build(t, sqliteEngine)
  const get = (url: string) => app.inject({ method: 'GET', url })
  const html = (await get('/v3/docs')).body
  assert.doesNotMatch(html, /favicon-(16x16|32x32)\.png/, 'Swagger UI\'s own icons are not linked')
  const icon = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/.exec(html)
  assert.ok(icon, html)
  const served = await get(new URL(icon[1], 'http://x/v3/docs').pathname)
  assert.equal(served.statusCode, 200)
  assert.match(served.body, /^<svg /)

  // The top bar's logo is put in by swagger-initializer.js as a data: URL: the service's name, not Fastify's logo.
  const initializer = (await get('/v3/docs/static/swagger-initializer.js')).body
  const fastifyLogo = await readFile(new URL('../../node_modules/@fastify/swagger-ui/static/logo.svg', import.meta.url))
  assert.ok(!initializer.includes(fastifyLogo.toString('base64')), 'the Fastify logo is not on the page')
  const logo = /data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)/.exec(initializer)
  assert.ok(logo, 'a logo of its own replaces it')
  assert.match(Buffer.from(logo[1], 'base64').toString(), /Plant catalogue API/)

  const document = (await get('/v3/openapi.json')).body
  assert.doesNotMatch(document, /\bseed\b|\.\.\/shared|CONTRACT\.md/i, 'the document says things in the package\'s own words')
})

test('the docs page at /v3/docs adds a plant through "Try it out" in a real browser', { skip: NO_CHROMIUM, timeout: 120_000 }, async (t) => {
  const service = shared!
  const context = await browser().newContext()
  t.after(() => context.close())

  const page = await context.newPage()
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
  // The top bar shows the service's own logo (Swagger UI would show Fastify's).
  const logo = await page.locator('.topbar img').getAttribute('src')
  assert.match(Buffer.from(logo?.split(',')[1] ?? '', 'base64').toString(), /Plant catalogue API/)
  await mkdir(OUTPUT, { recursive: true })
  await page.screenshot({ path: join(OUTPUT, 'browser-docs-top.png') })
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

test('the docs page at /v3/docs uploads a photo through "Try it out" (a file picker for the binary body)', { skip: NO_CHROMIUM, timeout: 120_000 }, async (t) => {
  const service = shared!
  const plant = await (await fetch(`${service.url}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Photographed"}' })).json() as { id: number }
  const folder = await mkdtemp(join(tmpdir(), 'plants-docs-'))
  const context = await browser().newContext()
  // One hook, the context closed before the picked file's folder is removed.
  t.after(async () => {
    await context.close()
    await rm(folder, { recursive: true, force: true })
  })
  const file = join(folder, 'fern.png')
  await writeFile(file, await picture('png', 3, 400))

  const page = await context.newPage()
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
