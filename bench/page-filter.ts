import { loadavg } from 'node:os'
import type { AddressInfo } from 'node:net'
import type { Page } from 'playwright-core'
import { buildApp } from '../src/app.js'
import type { BatchOperation } from '../src/catalogue/batch.js'
import { testConfig } from '../src/config.js'
import { openSqliteStore } from '../src/store/sqlite/sqlite-plant-store.js'
import { buildPage, KEY, launchBrowser } from '../test/helpers/staff-page.js'

// node --import tsx bench/page-filter.ts [--plants=100000] [--changes=15] [--key-ms=120]
//
// The staff page's filter change on a large catalogue (the target: "a filter change answered on
// screen ≤ 150 ms median on 100,000 plants", measured, not asserted): a service on SQLite holding N
// plants (written through the store's own batch path, 500 a transaction, not N single POSTs), keys on
// as in the browser tests. In Chromium at 1280 px the page changes a filter `changes` times each way:
// the status select (chosen as with the pointer), and the category and search boxes, emptied and
// typed a key at a time as a person types (`--key-ms`, 120 ms apart: about 80 words a minute; the
// page answers each key, the newest request aborting the one before). For each change, from the
// input or change event's own timestamp (the last key's), to the marks of the query that change
// asked for (each mark names its query):
//   asked  the page sends the list's request (User Timing mark `list-asked`);
//   shown  the new rows are in the list (mark `list-shown`, set once the rows are rendered);
//   paint  the first frame after that has been painted (a task queued from requestAnimationFrame);
//   count  "1–20 of N" is there (mark `list-counted`).
// Medians and p90s, and the load average when the changes ran.

const arg = (name: string, fallback: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback)
const plants = arg('plants', 100_000)
const changes = arg('changes', 15)
const keyMs = arg('key-ms', 120)
const quantile = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))]

const GENERA = ['Monstera', 'Ficus', 'Calathea', 'Sansevieria', 'Pothos', 'Philodendron', 'Zamioculcas', 'Lavandula', 'Rosmarinus', 'Olea', 'Hydrangea', 'Strelitzia', 'Aloe', 'Echeveria', 'Alocasia', 'Begonia']
const SPECIES = ['deliciosa', 'lyrata', 'orbifolia', 'trifasciata', 'aureum', 'brasil', 'zamiifolia', 'angustifolia', 'officinalis', 'europaea', 'macrophylla', 'nicolai', 'vera', 'elegans', 'zebrina', 'maculata']
const SIZES = ['small', 'medium', 'large', 'XL']
const CATEGORIES = ['indoor', 'outdoor', 'herbs', 'succulents', 'trees', 'ferns']
const STATUSES = ['available', 'available', 'pending', 'sold'] as const

buildPage()
const store = await openSqliteStore({ dataDir: ':memory:', feedRetentionMs: 86_400_000 })
const app = await buildApp(testConfig({ apiKeys: [KEY] }), { store })
await app.listen({ host: '127.0.0.1', port: 0 })
const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

const seeding = performance.now()
for (let from = 0; from < plants; from += 500) {
  const operations: BatchOperation[] = []
  for (let i = from; i < Math.min(plants, from + 500); i++) {
    operations.push({
      op: 'create',
      fields: {
        name: `${GENERA[i % 16]} ${SPECIES[(i >> 4) % 16]} ${SIZES[i % 4]} ${i + 1}`,
        category: CATEGORIES[i % CATEGORIES.length],
        tags: i % 5 === 0 ? ['large', 'pet-safe'] : ['easy'],
        status: STATUSES[i % 4],
        price: `${5 + (i * 37) % 180}.${i % 2 === 0 ? '50' : '99'}`,
        sku: `PC-${i + 1}`,
        description: i % 3 === 0 ? 'Bright indirect light; water when the top of the soil is dry.' : null
      }
    })
  }
  await store.batch(operations, undefined, { actor: 'bench' }, { results: false })
}
console.log(`${plants} plants seeded through the store's batches in ${Math.round((performance.now() - seeding) / 1000)} s`)

interface Timing { asked: number, shown: number, paint: number, count: number }

/**
 * Makes one filter change with `act` and times it from that change's input or change event (the
 * last one: a select chosen sends both) to each of the page's marks for the query it caused.
 */
async function timed (page: Page, act: () => Promise<void>, param: string, value: string): Promise<Timing> {
  await page.evaluate(([param, value]) => {
    const w = window as any
    w.benchEvent = undefined
    w.benchPaint = undefined
    w.benchWanted = (detail: string) => new URLSearchParams(detail).getAll(param).join(',') === value
    for (const name of ['list-asked', 'list-shown', 'list-counted']) performance.clearMarks(name)
  }, [param, value])
  await act()
  return page.evaluate(WAIT_FOR_MARKS) as Promise<Timing>
}

// In the page, as source text: the compiler would name a function declared inside the callback
// with a helper the page does not have.
// Marks of an earlier key's query (answered before the last key) do not count.
const WAIT_FOR_MARKS = `new Promise((resolve) => {
  const check = () => {
    const [asked, shown, counted] = ['list-asked', 'list-shown', 'list-counted']
      .map((name) => performance.getEntriesByName(name).find((m) => window.benchWanted(m.detail)))
    if (asked === undefined || shown === undefined || counted === undefined || !(window.benchPaint > 0) || window.benchEvent === undefined) {
      setTimeout(check, 5)
      return
    }
    const from = window.benchEvent
    resolve({ asked: asked.startTime - from, shown: shown.startTime - from, paint: window.benchPaint - from, count: counted.startTime - from })
  }
  check()
})`

const browser = await launchBrowser()
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
const page = await context.newPage()
const errors: string[] = []
page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
await page.goto(url + '/', { waitUntil: 'load' })
await page.waitForFunction(() => performance.getEntriesByName('plants-shown').length > 0)
// The bench's own listener, in the capture phase before the page's: the timestamp of the last input
// or change event. And at the wanted query's `list-shown` mark (set as its rows are rendered), the
// first frame after it: a task queued from the next animation frame.
await page.evaluate(() => {
  const w = window as any
  for (const type of ['input', 'change']) document.addEventListener(type, (event) => { w.benchEvent = event.timeStamp }, true)
  const mark = performance.mark.bind(performance)
  performance.mark = (name: string, options?: PerformanceMarkOptions) => {
    const made = mark(name, options)
    if (name === 'list-shown' && w.benchPaint === undefined && w.benchWanted?.(options?.detail) === true) {
      w.benchPaint = 0
      requestAnimationFrame(() => setTimeout(() => { w.benchPaint = performance.now() }, 0))
    }
    return made
  }
})
await page.waitForLoadState('networkidle')

const status = page.getByRole('combobox', { name: 'Status', exact: true })
const category = page.getByRole('textbox', { name: 'Category', exact: true })
const search = page.getByRole('searchbox', { name: 'Search by name' })
// Typed: the box emptied (answered too: not timed), then the value a key at a time.
const typed = (box: typeof search) => async (value: string): Promise<void> => {
  await box.fill('')
  await page.waitForTimeout(400)
  await box.pressSequentially(value, { delay: keyMs })
}
const ways: Array<{ name: string, param: string, values: string[], act: (value: string) => Promise<void>, reset: () => Promise<void> }> = [
  { name: 'status', param: 'status', values: ['available', 'pending', 'sold', 'available,pending', ''], act: (v) => status.selectOption(v).then(() => {}), reset: async () => {} },
  { name: 'category', param: 'category', values: ['indoor', 'outdoor', 'herbs', 'succulents', 'trees', 'ferns'], act: typed(category), reset: () => category.fill('').then(() => page.waitForTimeout(600)) },
  { name: 'search', param: 'q', values: ['monstera', 'ficus lyrata', 'aloe', 'calathea orbifolia', 'begonia', 'olea'], act: typed(search), reset: () => search.fill('').then(() => page.waitForTimeout(600)) }
]
const started = new Date().toISOString()
const figures: Record<string, Timing[]> = {}
const loads: string[] = []
for (const way of ways) {
  const times: Timing[] = []
  for (let i = 0; i < changes; i++) {
    const value = way.values[i % way.values.length]
    times.push(await timed(page, () => way.act(value), way.param, value))
    await page.waitForTimeout(150)
  }
  await way.reset()
  figures[way.name] = times
  loads.push(loadavg().map((n) => n.toFixed(2)).join(' '))
}
const rows = await page.locator('#plants > li').count()
console.log(`${changes} changes each way, started ${started}, on ${plants} plants (${rows} rows a page); ms from the input or change event:`)
for (const [name, times] of Object.entries(figures)) {
  const line = (['asked', 'shown', 'paint', 'count'] as const)
    .map((k) => `${k} ${Math.round(quantile(times.map((t) => t[k]), 0.5))}/${Math.round(quantile(times.map((t) => t[k]), 0.9))}`)
    .join(', ')
  console.log(`  ${name.padEnd(8)} median/p90: ${line}`)
}
console.log(`load average after each way: ${loads.join(' | ')}; console errors: ${errors.length}`)
await browser.close()
await app.close()
await store.close()
