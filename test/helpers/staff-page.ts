import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, test, type TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core'
import { buildApp, type AppOptions } from '../../src/app.js'
import { testConfig, type Config } from '../../src/config.js'
import type { Timings } from '../../web/dom.js'
import { ENGINES, type Engine, type StoreOptions } from './engines.js'
import { pngOf } from './pictures.js'
import { built, ROOT } from './process.js'

// What the staff page's browser tests share: a built page, a service on an engine with API keys
// on, a Chromium page that records console errors and requests, and an API client for the
// "someone else" who changes plants while staff work.

export const CHROMIUM = '/usr/bin/chromium'
export const NO_CHROMIUM = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install chromium)`
export const OUTPUT = new URL('../../test-output/', import.meta.url).pathname
export const KEY = 'staff-key-for-tests'
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']

/**
 * Fails unless dist/web holds the page built from the current sources: `npm test` builds once
 * before the tests, and no test builds (a build in place would break the files running beside it).
 */
export function pageBuilt (): void {
  built('dist/web/index.html')
}

/** Compiles web/ into dist/web, for the page's benchmarks (bench/page-*.ts), which run alone. */
export function buildPage (): void {
  execFileSync('npm', ['run', '--silent', 'build:web'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
}

export function launchBrowser (): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS })
}

/** The process's one Chromium (the browser tier runs its files in one process), for every file that asks. */
let chromiumOfProcess: Browser | undefined
let chromiumHooked = false

/**
 * The process's one Chromium, launched before its first test once the page is built and closed
 * after its last. Call at the top level of a file; the getter is valid inside tests.
 */
export function sharedBrowser (): () => Browser {
  if (!chromiumHooked) {
    chromiumHooked = true
    before(async () => {
      if (NO_CHROMIUM) return
      pageBuilt()
      chromiumOfProcess = await launchBrowser()
    })
    after(async () => { await chromiumOfProcess?.close() })
  }
  return () => chromiumOfProcess!
}

/** What a staff page test is given besides its page: the test, its engine, the file's Chromium. */
export interface StaffPageRun { t: TestContext, engine: Engine, browser: Browser }

/** A service set up otherwise than the default (webhooks to loopback, quicker retries; a store's clock, a history retention). */
export interface StaffPageService {
  config?: Partial<Config>
  app?: Omit<AppOptions, 'store'>
  store?: StoreOptions
}

/**
 * For a test that reads what emptying the catalogue leaves (the list of API keys, which revoked
 * keys stay in): a service of its own, set up as the file's.
 */
export const OWN_SERVICE: StaffPageService = Object.freeze({})

/**
 * The staff page's browser tests: `staffPageTest(name, body)` runs `body` once per engine, each on
 * a fresh page in the process's one Chromium (skipped without Chromium or the engine). The file's
 * tests share one service per engine, set up by `service`, opened by the first test that needs it,
 * emptied before each test (`emptyCatalogue`) and closed after the file's last; a test given its
 * own setup (`own`, over the file's) gets a service of its own. Call at the top level of the file.
 */
export function staffPageTests (service: StaffPageService = {}): (name: string, body: (staff: StaffPage, run: StaffPageRun) => Promise<void>, own?: StaffPageService) => void {
  const browser = sharedBrowser()
  // A store opened and an app built for each test and engine was work none of them needs: one
  // service per engine, emptied before each test, serves the same page. Closed once the file's
  // tests have run (the tier's files share a process, and each file's services would otherwise
  // stay open until its end).
  const shared = new Map<Engine['name'], Promise<StaffService>>()
  let left = 0
  const closeShared = async (): Promise<void> => {
    const services = [...shared.values()]
    shared.clear()
    for (const s of services) await (await s).close()
  }
  after(closeShared) // a file whose last test did not run
  return (name, body, own) => {
    for (const engine of ENGINES) {
      const skip = NO_CHROMIUM || engine.skip
      if (!skip) left++
      test(`${engine.name}: ${name}`, { skip, timeout: 120_000 }, async (t) => {
        try {
          let on: StaffService
          if (own) {
            on = await openStaffService(engine, { ...service, ...own })
            t.after(() => on.close())
          } else {
            let opening = shared.get(engine.name)
            if (!opening) shared.set(engine.name, opening = openStaffService(engine, service))
            on = await opening
            // Every page of the test before closed first (its own hooks close the contexts it made):
            // a request one of them left under way could otherwise change this test's catalogue.
            await noConnections(on.app)
            await emptyCatalogue(on)
          }
          await body(await openStaffPage(t, browser(), on), { t, engine, browser: browser() })
        } finally {
          // Registered last, so it runs after the test's own hooks have closed its pages.
          if (--left === 0) t.after(closeShared)
        }
      })
    }
  }
}

/** The dialog that asks staff for their key. */
export const keyDialog = (page: Page) => page.getByRole('dialog', { name: 'Your staff key' })

/** Answers the key dialog (which must be or become open) with `key`. */
export async function giveKey (page: Page, key = KEY): Promise<void> {
  const dialog = keyDialog(page)
  await dialog.waitFor()
  await dialog.getByLabel('Staff key').fill(key)
  await dialog.getByRole('button', { name: 'Use key' }).click()
  await dialog.waitFor({ state: 'hidden' })
}

/**
 * Waits until the list has been loaded from scratch for a query holding `part` (say 'status=available')
 * and no load is under way: after a filter changes, the rows of the list before stay on screen until
 * the new answer replaces them, so waiting for a row that both lists hold proves nothing.
 */
export async function listShown (page: Page, part: string): Promise<void> {
  await page.waitForFunction((part) => document.querySelector('#plants')?.getAttribute('aria-busy') !== 'true' &&
    performance.getEntriesByName('list-shown').some((m) => String((m as PerformanceMark).detail).includes(part)), part)
}

/** A plant's row in the page's list, by its exact name. */
export const plantButton = (page: Page, name: string) => page.locator('#plants').getByRole('button', { name, exact: true })

/**
 * The list loaded afresh, plant `name` opened, `key` given when the page asks for it (null: the tab
 * holds one already), and its editor once it shows the Stock line `stock` (exact text, or a
 * pattern), when one is named.
 */
export async function openEditor (staff: { url: string, page: Page }, name: string, stock?: string | RegExp, key: string | null = KEY): Promise<Locator> {
  const { page } = staff
  await page.goto(staff.url + '/')
  await plantButton(page, name).click()
  if (key !== null) await giveKey(page, key)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  if (stock !== undefined) await editor.getByText(stock, { exact: typeof stock === 'string' }).waitFor()
  return editor
}

export interface Answer { status: number, headers: http.IncomingHttpHeaders, body: any }

export interface StaffPage {
  url: string
  app: FastifyInstance
  context: BrowserContext
  page: Page
  /** Console errors and uncaught exceptions, as they happened. */
  errors: string[]
  /** Requests to anything but the service (the page must work offline). */
  foreign: string[]
  /** Every request the page made, as `METHOD url`. */
  requests: string[]
  /** `status url` of every answer the page got that was not a success. */
  refusals: string[]
  /** A write or read through the API, on a connection of its own (as another till would). */
  call (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>
  /** Adds a PNG photo to plant `id` through the API. */
  addPhoto (id: number, picture: Buffer): Promise<void>
  add (plant: Record<string, unknown>): Promise<any>
  /** The statuses of the refusals the page met. */
  refusedStatuses (): Promise<number[]>
}

/** A service on a store of its own, listening on a loopback port, with API keys on. */
export interface StaffService {
  url: string
  app: FastifyInstance
  /** Closes the service, then its store. */
  close (): Promise<void>
}

/** A service on a fresh store of `engine` with API keys on. */
export async function openStaffService (engine: Engine, service: StaffPageService = {}): Promise<StaffService> {
  const store = await engine.open(service.store)
  // A loaded machine can take longer than the service's 20 s to make a photo's sizes (as in test/helpers/app.ts).
  const app = await buildApp(testConfig({ apiKeys: [KEY], ...service.config }), { pictureDeadlineMs: 120_000, ...service.app, store })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    close: async () => {
      app.server.closeAllConnections()
      await app.close()
      await store.close()
    }
  }
}

/**
 * The page's waits in tests (web/dom.ts: timing): each a person needs (half a second before "No plant
 * matches" while typing, a second before a busy read is asked again, two before the live feed
 * reopens) made short, so a test waits for what the page does, not for the page's timers. The
 * refresh after changes stays as staff have it (150 ms): at 10 ms, a sale's own change read back
 * while its message shows scrolled the page (browser-page-undo's "never covers the row" test).
 */
export const TEST_TIMINGS: Readonly<Partial<Timings>> = Object.freeze({ holdEmptyMs: 20, settleMs: 50, liveRetryMs: 100, retryMs: 50 })

/** A page's timers for a test that needs some as staff have them: `pageTimings(page, { holdEmptyMs: 500 })` before it loads. */
export async function pageTimings (page: Page, timings: Partial<Timings>): Promise<void> {
  // Whichever init script runs first (the context's, with TEST_TIMINGS, or this page's), these win.
  await page.addInitScript((timings) => {
    const w = window as Window & { plantsTimings?: Partial<Timings> }
    w.plantsTimings = Object.assign(w.plantsTimings ?? {}, timings)
  }, timings)
}

/** A browser page on `service`, in a context of its own, closed after the test. */
export async function openStaffPage (t: TestContext, browser: Browser, service: StaffService): Promise<StaffPage> {
  const { url, app } = service
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  t.after(() => context.close())
  await context.addInitScript((timings) => {
    const w = window as Window & { plantsTimings?: Partial<Timings> }
    w.plantsTimings = { ...timings, ...w.plantsTimings }
  }, TEST_TIMINGS)
  const page = await context.newPage()
  const errors: string[] = []
  const foreign: string[] = []
  const requests: string[] = []
  const refusals: string[] = []
  page.on('response', (response) => { if (response.status() >= 400) refusals.push(`${response.status()} ${response.url()}`) })
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`))
  // A dialog of the browser's own (alert, confirm, the question on leaving) is never expected unless a test waits for it.
  page.on('dialog', (dialog) => {
    errors.push(`unexpected ${dialog.type()}: ${dialog.message()}`)
    void dialog.dismiss()
  })
  page.on('request', (request) => {
    requests.push(`${request.method()} ${request.url()}`)
    const u = new URL(request.url())
    if (!['data:', 'blob:'].includes(u.protocol) && u.origin !== url) foreign.push(request.url())
  })

  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> =>
    request(url, method, path, body, headers)
  const add = async (plant: Record<string, unknown>): Promise<any> => {
    const res = await call('POST', '/v3/plant', plant)
    if (res.status !== 200) throw new Error(`add failed: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }
  const addPhoto = async (id: number, picture: Buffer): Promise<void> => {
    const res = await call('POST', `/v3/plant/${id}/photos`, picture, { 'content-type': 'image/png' })
    if (res.status !== 201) throw new Error(`photo refused: ${res.status} ${JSON.stringify(res.body)}`)
  }
  const refusedStatuses = async (): Promise<number[]> => refusals.map((r) => Number(r.split(' ')[0]))
  return { url, app, context, page, errors, foreign, requests, refusals, call, addPhoto, add, refusedStatuses }
}

/** A write or read through the API of the service at `url`, with the staff key, on a connection of its own. */
export function request (url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body))
    const req = http.request(`${url}${path}`, {
      method,
      agent: false, // a connection of its own: dropping the page's connections must not break it
      headers: {
        authorization: `Bearer ${KEY}`,
        ...(payload ? { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json', 'content-length': payload.length } : {}),
        ...headers
      }
    }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) })
      })
    })
    req.on('error', reject)
    req.end(payload)
  })
}

/** `request`, refused unless the answer has status `status`. */
async function expect (status: number, url: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await request(url, method, path, body)
  if (res.status !== status) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/**
 * Empties the catalogue of a shared service through the API, as staff could: every plant deleted,
 * the trash emptied, every webhook removed. What the API cannot take away stays, and tests must
 * not depend on it: the change feed, the history of deleted plants, the ids already given (the
 * next plant's id is higher), and API keys (revoked, they stay listed).
 */
export async function emptyCatalogue ({ url }: StaffService): Promise<void> {
  for (const hook of (await expect(200, url, 'GET', '/v3/webhooks')).items) await expect(204, url, 'DELETE', `/v3/webhooks/${hook.id}`)
  for (;;) {
    const plants = (await expect(200, url, 'GET', '/v3/plant?limit=100')).items as Array<{ id: number }>
    if (plants.length === 0) break
    await expect(200, url, 'POST', '/v3/plant/batch', { operations: plants.map((p) => ({ op: 'delete', id: p.id })) })
  }
  for (;;) {
    const trashed = (await expect(200, url, 'GET', '/v3/trash?limit=100')).items as Array<{ id: number }>
    if (trashed.length === 0) break
    for (const plant of trashed) await expect(204, url, 'DELETE', `/v3/trash/${plant.id}`)
  }
}

/** Settles once `app` holds no connection (the browser's and the API client's all closed). */
async function noConnections (app: FastifyInstance): Promise<void> {
  const count = () => new Promise<number>((resolve, reject) => app.server.getConnections((err, n) => err ? reject(err) : resolve(n)))
  const deadline = Date.now() + 30_000
  while (await count() > 0) {
    if (Date.now() > deadline) throw new Error(`the service still holds ${await count()} connections after the test before closed its pages`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/**
 * Console errors other than the line Chromium prints for each answer that was not a success: those
 * are checked through `refusals`, by URL and status, so an unexpected one (a missing favicon) still fails.
 */
export function unexpectedErrors (errors: string[]): string[] {
  return errors.filter((e) => !/^Failed to load resource: the server responded with a status of \d+/.test(e))
}

/** axe-core's source, read once a process. */
let axeSource: Promise<string> | undefined

/** axe-core's serious and critical violations on the page as it is now. */
export async function axe (page: Page): Promise<Array<{ id: string, impact: string, nodes: number, help: string }>> {
  axeSource ??= readFile(new URL('../../node_modules/axe-core/axe.min.js', import.meta.url), 'utf8')
  const source = await axeSource
  // Evaluated by the test's debugger connection, which the page's CSP does not govern (the page keeps
  // its CSP); once a document: a page checked again since its last load has it already.
  if (!await page.evaluate(() => 'axe' in window)) await page.evaluate(source)
  // The page at rest: a list being read again is dimmed (opacity 0.7, faded in and out), and axe
  // measuring its text's contrast mid-fade failed now and then on a loaded machine.
  await page.waitForFunction(() => document.querySelector('[aria-busy="true"]') === null &&
    document.getAnimations().every((a) => a.playState !== 'running'))
  return page.evaluate(async () => {
    const results = await (window as any).axe.run(document, { resultTypes: ['violations'] })
    return results.violations
      .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      .map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help, targets: v.nodes.map((n: any) => n.target.join(' ')) }))
  })
}

/** The page fits its window: nothing to scroll sideways. */
export async function fitsWidth (page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)
}

/**
 * axe-core and a screenshot of the page as it is, at 1280 then 375 px (back to 1280 after); the
 * screenshots are `<file>-<width>.png` in test-output.
 */
export async function bothWidths (page: Page, name: string, file: string): Promise<void> {
  await mkdir(OUTPUT, { recursive: true })
  for (const [width, height] of [[1280, 900], [375, 812]]) {
    await page.setViewportSize({ width, height })
    assert.deepEqual(await axe(page), [], `axe-core: the ${name} at ${width} px`)
    assert.ok(await fitsWidth(page), `the ${name} fits ${width} px`)
    await page.screenshot({ path: join(OUTPUT, `${file}-${width}.png`), fullPage: true })
  }
  await page.setViewportSize({ width: 1280, height: 900 })
}

/** A real PNG of `width` x `height` (a soft green gradient), made without an image library. */
export function png (width = 160, height = 120): Buffer {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header[8] = 8 // bit depth
  header[9] = 2 // RGB
  const rows: Buffer[] = []
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3)
    for (let x = 0; x < width; x++) {
      row[1 + x * 3] = 60 + Math.round(80 * x / width)
      row[2 + x * 3] = 140 + Math.round(80 * y / height)
      row[3 + x * 3] = 90
    }
    rows.push(row)
  }
  return pngOf(header, Buffer.concat(rows))
}
