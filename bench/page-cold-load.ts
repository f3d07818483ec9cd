import { loadavg } from 'node:os'
import type { AddressInfo } from 'node:net'
import { buildApp } from '../src/app.js'
import { testConfig } from '../src/config.js'
import { openSqliteStore } from '../src/store/sqlite/sqlite-plant-store.js'
import { buildPage, KEY, launchBrowser, png } from '../test/helpers/staff-page.js'

// node --import tsx bench/page-cold-load.ts [--plants=300] [--runs=5]
//
// The staff page's first usable list on a cold load (the target: ≤ 1 s, measured, not asserted): a
// service on SQLite holding N plants with a photo each (a picture of its own, so the first page
// fetches 20 different thumbnails), keys on as in the browser tests; each run a fresh Chromium
// context (an empty cache) loads / and reads the browser's performance timeline: the page's
// User Timing mark `plants-shown` (the first page of plants on screen, taking input), the
// navigation's responseEnd and load event, and the bytes transferred. Medians of the runs.

const arg = (name: string, fallback: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback)
const plants = arg('plants', 300)
const runs = arg('runs', 5)
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

buildPage()
const store = await openSqliteStore({ dataDir: ':memory:', feedRetentionMs: 86_400_000 })
const app = await buildApp(testConfig({ apiKeys: [KEY] }), { store })
await app.listen({ host: '127.0.0.1', port: 0 })
const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
const auth = { authorization: `Bearer ${KEY}` }

const seeded = performance.now()
for (let i = 0; i < plants; i++) {
  const res = await app.inject({ method: 'POST', url: '/v3/plant', headers: auth, payload: { name: `Plant ${i + 1}`, category: ['indoor', 'outdoor', 'herbs'][i % 3], tags: ['easy'], price: `${5 + (i % 40)}.50`, sku: `SKU-${i + 1}` } })
  if (res.statusCode !== 200) throw new Error(`seed: ${res.statusCode} ${res.body}`)
  const photo = await app.inject({ method: 'POST', url: `/v3/plant/${res.json().id}/photos`, headers: { ...auth, 'content-type': 'image/png' }, payload: png(200 + (i % 97), 150 + (i % 89)) })
  if (photo.statusCode !== 201) throw new Error(`photo: ${photo.statusCode} ${photo.body}`)
}
console.log(`${plants} plants with a photo each, seeded in ${Math.round((performance.now() - seeded) / 1000)} s`)

const browser = await launchBrowser()
const shown: number[] = []
const loaded: number[] = []
const served: number[] = []
const bytes: number[] = []
for (let run = 0; run < runs; run++) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const session = await context.newCDPSession(page)
  await session.send('Network.enable')
  let total = 0
  session.on('Network.loadingFinished', (event) => { total += event.encodedDataLength })
  await page.goto(url + '/', { waitUntil: 'load' })
  await page.waitForFunction(() => performance.getEntriesByName('plants-shown').length > 0)
  await page.waitForLoadState('networkidle')
  const timing = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming
    return { shown: performance.getEntriesByName('plants-shown')[0].startTime, load: nav.loadEventEnd, html: nav.responseEnd }
  })
  shown.push(timing.shown)
  loaded.push(timing.load)
  served.push(timing.html)
  bytes.push(total)
  console.log(`run ${run + 1}: plants shown ${Math.round(timing.shown)} ms, load event ${Math.round(timing.load)} ms, HTML in ${Math.round(timing.html)} ms, ${total} bytes`)
  await context.close()
}
console.log(`median of ${runs}: first usable list ${Math.round(median(shown))} ms after navigation (load event ${Math.round(median(loaded))} ms, HTML ${Math.round(median(served))} ms), ${median(bytes)} bytes transferred; load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}`)
await browser.close()
await app.close()
await store.close()
