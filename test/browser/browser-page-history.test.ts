import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Locator, Page } from 'playwright-core'
import { axe, fitsWidth, giveKey, KEY, OUTPUT, plantButton, png, staffPageTests, unexpectedErrors, type StaffPage } from '../helpers/staff-page.js'

// A plant's history on the staff page: the editor's History part lists who changed what and when
// in staff's words, older versions a page at a time, following live changes; "Go back to this
// version" confirms what it changes, reverts with If-Match and offers Undo; a change made
// meanwhile (412) and a version no longer kept (404) are said plainly; a plant in the trash has
// its history too. All of it from the keyboard, on both engines. The history's script is fetched
// when first needed, and a failure to fetch it is said.

const staffPageTest = staffPageTests()
const DAY = 86_400_000

type Headers = Record<string, string>

/** The keys made so far, by service, then name and scope: a service keeps its keys between tests, and never gives a name twice. */
const made = new WeakMap<StaffPage['app'], Map<string, Headers>>()

/** A key named `name` with `scope`, made through the API (once a service); the headers a till holding it sends. */
async function keyFor (staff: StaffPage, name: string, scope: string): Promise<Headers> {
  const keys = made.get(staff.app) ?? new Map<string, Headers>()
  made.set(staff.app, keys)
  const known = keys.get(`${name} ${scope}`)
  if (known) return known
  const res = await staff.call('POST', '/v3/keys', { name, scope })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  const headers = { authorization: `Bearer ${res.body.secret}` }
  keys.set(`${name} ${scope}`, headers)
  return headers
}

async function write (staff: StaffPage, method: string, path: string, body: unknown, headers: Headers = {}): Promise<any> {
  const res = await staff.call(method, path, body, headers)
  assert.ok(res.status === 200 || res.status === 201, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** The plant's versions through the API, by version number: when each was made. */
async function timesOf (staff: StaffPage, id: number): Promise<Map<number, string>> {
  const res = await staff.call('GET', `/v3/plant/${id}/history?limit=100`)
  assert.equal(res.status, 200)
  return new Map(res.body.items.map((e: any) => [e.version, e.at]))
}

/** The page's reads of a plant's history. */
const historyReads = (staff: StaffPage): string[] => staff.requests.filter((r) => /\/v3\/plant\/\d+\/history/.test(r))

/** What the page shows of each version, top to bottom: its line, its changes, and whether it offers going back. */
const shown = (list: Locator) => list.locator(':scope > li').evaluateAll((rows) => rows.map((row) => ({
  version: Number((row as HTMLElement).dataset.version),
  line: row.querySelector('.version-line')?.textContent,
  changes: [...row.querySelectorAll('.version-changes li')].map((li) => li.textContent),
  goBack: row.querySelector('[data-role="go-back"]') !== null
})))

/** A time and an amount in the browser's own words, as the page writes them. */
const when = (page: Page, at: string | undefined): Promise<string> =>
  page.evaluate((at) => new Intl.DateTimeFormat(navigator.language, { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(at!)), at)
const euros = (page: Page, amount: number): Promise<string> =>
  page.evaluate((n) => new Intl.NumberFormat(navigator.language, { style: 'currency', currency: 'EUR' }).format(n), amount)

/** The focused element's version row and role, or its id outside the versions. */
const focused = (page: Page) => page.evaluate(() => {
  const active = document.activeElement as HTMLElement | null
  const row = active?.closest<HTMLElement>('li.version')
  return row ? `${row.dataset.version}:${active!.dataset.role}` : active?.id ?? ''
})

/** Presses Tab until `target` (a `focused` answer) has the focus; at most `most` presses. */
async function tabTo (page: Page, target: string, most = 60): Promise<void> {
  for (let i = 0; i < most; i++) {
    if (await focused(page) === target) return
    await page.keyboard.press('Tab')
  }
  assert.fail(`${target} was not reached with Tab (focus on ${await focused(page)})`)
}

async function screenshots (page: Page, scrollTo: Locator, name: string, engine: string): Promise<void> {
  await mkdir(OUTPUT, { recursive: true })
  for (const [width, height] of [[1280, 900], [375, 812]]) {
    await page.setViewportSize({ width, height })
    await scrollTo.scrollIntoViewIfNeeded()
    assert.deepEqual(await axe(page), [], `axe-core: the ${name} at ${width} px`)
    assert.ok(await fitsWidth(page), `the ${name} fits ${width} px`)
    await page.screenshot({ path: join(OUTPUT, `browser-page-${engine}-${name}-${width}.png`) })
  }
  await page.setViewportSize({ width: 1280, height: 900 })
}

staffPageTest('the editor\'s History, read when opened, says who changed what and when in staff words, pages with Show older, follows live changes; a plant in the trash has its history too', async (staff, { engine }) => {
  const { page } = staff
  const anna = await keyFor(staff, 'anna', 'write')
  const till = await keyFor(staff, 'till-3', 'sell')
  const plant = await write(staff, 'POST', '/v3/plant', { name: 'Monstera', category: 'indoor', tags: ['large'], price: '12', sku: 'MON-1' }, anna)
  const id = plant.id
  await write(staff, 'PATCH', `/v3/plant/${id}`, { status: 'sold' }, till)
  await write(staff, 'PATCH', `/v3/plant/${id}`, { status: 'available', price: '9.5', tags: ['large', 'rare'] }, anna)
  for (const size of [320, 200]) await write(staff, 'POST', `/v3/plant/${id}/photos`, png(size, 240), { ...anna, 'content-type': 'image/png' })
  await write(staff, 'PATCH', `/v3/plant/${id}`, { description: 'Big split leaves; likes bright, indirect light and a moss pole to climb on as it grows.' }, anna)
  for (let i = 1; i <= 5; i++) await write(staff, 'PATCH', `/v3/plant/${id}`, { name: `Monstera (${i})` })
  await write(staff, 'PATCH', `/v3/plant/${id}`, { name: 'Monstera deliciosa' })
  const at = await timesOf(staff, id)
  assert.equal(at.size, 12)

  await page.goto(staff.url + '/')
  await plantButton(page, 'Monstera deliciosa').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  const toggle = editor.getByRole('button', { name: 'History', exact: true })
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false')
  const list = editor.locator('#history-list')
  assert.ok(await list.isHidden())
  assert.deepEqual(historyReads(staff), [], 'opening a plant does not read its history')
  const fetched = (module: string): boolean => staff.requests.some((r) => r.endsWith(`/page/${module}`))
  assert.ok(!fetched('history-editor.js') && !fetched('history.js'), 'nor fetches the History part: the first load stays small')

  await toggle.click()
  await editor.locator('#history-toggle[aria-expanded="true"]').waitFor()
  await list.locator(':scope > li').nth(9).waitFor()
  const versions = await shown(list)
  assert.deepEqual(versions.map((v) => v.version), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3], 'newest first, ten a page')
  assert.deepEqual(versions[0], { version: 12, line: `Changed ${await when(page, at.get(12))} with a key set up where the catalogue runs`, changes: ['Name: Monstera (5) → Monstera deliciosa'], goBack: false })
  assert.deepEqual(versions[6], {
    version: 6,
    line: `Changed ${await when(page, at.get(6))} by anna`,
    changes: ['Description: none → “Big split leaves; likes bright, indirect light and a moss…”'],
    goBack: true
  })
  assert.deepEqual(versions.slice(7, 9).map((v) => [v.line, v.changes, v.goBack]), [
    [`Changed ${await when(page, at.get(5))} by anna`, ['1 photo added'], false],
    [`Changed ${await when(page, at.get(4))} by anna`, ['1 photo added'], false]
  ], 'photos are counted, and going back is not offered for them (photos stay as they are)')
  assert.deepEqual(versions[9], {
    version: 3,
    line: `Changed ${await when(page, at.get(3))} by anna`,
    changes: ['Tags: rare added', 'Status: Sold → Available', `Price: ${await euros(page, 12)} → ${await euros(page, 9.5)}`],
    goBack: true
  })
  assert.equal(historyReads(staff).length, 1)
  assert.ok(fetched('history-editor.js') && fetched('history-words.js'))

  // Show older: the rest, after the ten; reading goes on at the first version added.
  await editor.getByRole('button', { name: 'Show older' }).click()
  await list.locator('li[data-version="1"]').waitFor()
  assert.equal(await focused(page), '2:line')
  const older = (await shown(list)).slice(10)
  assert.deepEqual(older, [
    { version: 2, line: `Changed ${await when(page, at.get(2))} by till-3`, changes: ['Status: Available → Sold'], goBack: true },
    {
      version: 1,
      line: `Added ${await when(page, at.get(1))} by anna`,
      changes: ['Name: Monstera', 'Category: indoor', 'Tags: large', 'Status: Available', `Price: ${await euros(page, 12)}`, 'SKU: MON-1'],
      goBack: true
    }
  ])
  assert.ok(await editor.getByRole('button', { name: 'Show older' }).isHidden(), 'no older versions left')

  // Another till sells it while the history is open: the new version shows at the top, the others stay.
  await write(staff, 'PATCH', `/v3/plant/${id}`, { status: 'sold' }, till)
  await list.locator('li[data-version="13"]').waitFor()
  const live = await shown(list)
  assert.deepEqual(live.map((v) => v.version), [13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1])
  const at13 = (await timesOf(staff, id)).get(13)
  assert.deepEqual([live[0].line, live[0].changes], [`Changed ${await when(page, at13)} by till-3`, ['Status: Available → Sold']])
  assert.equal(await editor.getByRole('combobox', { name: 'Status' }).inputValue(), 'sold', 'the form follows too')
  await screenshots(page, editor.locator('li[data-version="3"]'), 'history', engine.name)

  // Closed and opened again, the editor shows the History closed, and reads it only when asked.
  const reads = historyReads(staff).length
  await editor.getByRole('button', { name: 'Close' }).click()
  await editor.waitFor({ state: 'hidden' })
  await plantButton(page, 'Monstera deliciosa').click()
  await editor.waitFor()
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false')
  assert.equal(historyReads(staff).length, reads)
  await editor.getByRole('button', { name: 'Close' }).click()

  // In the trash, read only: who moved it there first, and no going back.
  assert.equal((await staff.call('DELETE', `/v3/plant/${id}`, undefined, anna)).status, 204)
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Trash' }).click()
  const opener = page.getByRole('button', { name: 'History: Monstera deliciosa' })
  // Its script cannot be fetched (the connection dropped): said in the message line.
  const script = (u: URL): boolean => u.pathname === '/page/trash-history.js'
  await page.route(script, (route) => route.abort())
  await opener.click()
  await page.getByRole('status').filter({ hasText: 'The history of “Monstera deliciosa” could not be loaded. Check the connection, then reload the page.' }).waitFor()
  await page.unroute(script)
  await page.reload()
  await opener.click()
  const dialog = page.getByRole('dialog', { name: 'History of “Monstera deliciosa”' })
  const trashed = dialog.locator('#trash-history-list')
  await trashed.locator(':scope > li').nth(9).waitFor()
  const atTrash = (await timesOf(staff, id)).get(14)
  const inTrash = await shown(trashed)
  assert.deepEqual(inTrash[0], { version: 14, line: `Moved to the trash ${await when(page, atTrash)} by anna`, changes: [], goBack: false })
  assert.ok(inTrash.every((v) => !v.goBack))
  await screenshots(page, trashed.locator('li[data-version="5"]'), 'trash-history', engine.name)
  await page.keyboard.press('Escape')
  await dialog.waitFor({ state: 'hidden' })
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'History: Monstera deliciosa')
  // Chromium logs the script's fetch cut short; nothing else may reach the console.
  assert.deepEqual(unexpectedErrors(staff.errors).filter((e) => !/net::ERR_/.test(e)), [])
  assert.deepEqual(await staff.refusedStatuses(), [])
})

staffPageTest('from the keyboard alone: History is reached and opened, an older version is gone back to after a confirmation naming the changes, and Undo goes back to the version before', async (staff, { engine }) => {
  const { page } = staff
  const anna = await keyFor(staff, 'anna', 'write')
  const fern = await write(staff, 'POST', '/v3/plant', { name: 'Fern', category: 'indoor', price: '5', tags: ['shade'] }, anna)
  const id = fern.id
  await write(staff, 'PATCH', `/v3/plant/${id}`, { price: '7.5', status: 'pending' }, anna)
  await staff.addPhoto(id, png(320, 240))
  await write(staff, 'PATCH', `/v3/plant/${id}`, { name: 'Boston fern' })
  const at = await timesOf(staff, id)

  // A link to the plant; the key typed; Tab to History, Enter.
  await page.goto(`${staff.url}/?plant=${id}`)
  await page.getByRole('dialog', { name: 'Your staff key' }).waitFor()
  await page.keyboard.type(KEY)
  await page.keyboard.press('Enter')
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.waitFor()
  await tabTo(page, 'history-toggle')
  await page.keyboard.press('Enter')
  const list = editor.locator('#history-list')
  await list.locator('li[data-version="1"]').waitFor()
  assert.deepEqual((await shown(list)).map((v) => [v.version, v.goBack]), [[4, false], [3, false], [2, true], [1, true]])

  // Tab to version 1's "Go back", past version 2's; its line describes it.
  await tabTo(page, '2:go-back', 3)
  await page.keyboard.press('Tab')
  assert.equal(await focused(page), '1:go-back')
  const described = await page.evaluate(() => document.getElementById(document.activeElement!.getAttribute('aria-describedby')!)?.textContent)
  assert.equal(described, `Added ${await when(page, at.get(1))} by anna`)
  await page.keyboard.press('Enter')
  const sure = page.getByRole('alertdialog', { name: 'Go back to this version?' })
  await sure.waitFor()
  assert.equal(await sure.locator('#confirm-text').innerText(),
    `“Boston fern” will be as it was on ${await when(page, at.get(1))}. Name: Boston fern → Fern; ` +
    `Price: ${await euros(page, 7.5)} → ${await euros(page, 5)}. Its status and photos stay as they are. You can undo this while the plant is open.`)
  assert.deepEqual(await axe(page), [], 'axe-core: the confirmation over the history')
  // Cancel has the focus (Enter does no harm); Shift+Tab reaches Go back.
  await page.keyboard.press('Shift+Tab')
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Go back')
  await page.keyboard.press('Enter')

  // Gone back: said in the editor, with Undo focused; the form, the service and the list agree.
  await editor.getByRole('status').filter({ hasText: `“Fern” is back as it was on ${await when(page, at.get(1))}.` }).waitFor()
  assert.equal(await focused(page), 'history-undo')
  assert.equal(await editor.getByRole('textbox', { name: 'Name', exact: true }).inputValue(), 'Fern')
  assert.equal(await editor.getByRole('textbox', { name: /^Price/ }).inputValue(), '5.00')
  assert.equal(await editor.getByRole('combobox', { name: 'Status' }).inputValue(), 'pending', 'the status stays (a hold happened in the world)')
  const now = await staff.call('GET', `/v3/plant/${id}`)
  assert.equal(now.headers.etag, `"${id}.5"`)
  assert.deepEqual([now.body.name, now.body.price, now.body.status, now.body.tags, now.body.photos.length], ['Fern', '5.00', 'pending', ['shade'], 1], 'photos stay')
  await page.locator(`#plants li[data-id="${id}"] [data-role="open"]`).filter({ hasText: /^Fern$/ }).waitFor()
  await list.locator('li[data-version="5"]').waitFor()
  const top = (await shown(list))[0]
  assert.deepEqual([top.line, top.changes], [`Went back to an earlier version ${await when(page, (await timesOf(staff, id)).get(5))} with a key set up where the catalogue runs`,
    ['Name: Boston fern → Fern', `Price: ${await euros(page, 7.5)} → ${await euros(page, 5)}`]])
  await screenshots(page, editor.locator('#history-undo'), 'history-gone-back', engine.name)

  // Undo (Enter on it): back to version 4's fields, as a new version.
  await tabTo(page, 'history-undo', 1)
  await page.keyboard.press('Enter')
  await editor.getByRole('status').filter({ hasText: 'Undone: “Boston fern” is back as it was.' }).waitFor()
  assert.equal(await focused(page), 'history-toggle')
  const undone = await staff.call('GET', `/v3/plant/${id}`)
  assert.equal(undone.headers.etag, `"${id}.6"`)
  assert.deepEqual([undone.body.name, undone.body.price, undone.body.status], ['Boston fern', '7.50', 'pending'])
  assert.equal(await editor.getByRole('textbox', { name: 'Name', exact: true }).inputValue(), 'Boston fern')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [])
})

staffPageTest('unsaved typing is asked about before going back; a change made while the confirmation was open is said (412), the plant shown as it is now, the typing kept', async (staff) => {
  const { page } = staff
  const anna = await keyFor(staff, 'anna', 'write')
  const ivy = await write(staff, 'POST', '/v3/plant', { name: 'Ivy', category: 'climbers' }, anna)
  const id = ivy.id
  await write(staff, 'PATCH', `/v3/plant/${id}`, { name: 'English ivy', status: 'pending' }, anna)
  await page.goto(staff.url + '/')
  await plantButton(page, 'English ivy').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  const name = editor.getByRole('textbox', { name: 'Name', exact: true })
  await name.fill('English ivy, variegated')
  await editor.getByRole('button', { name: 'History', exact: true }).click()
  const goBack = editor.locator('li[data-version="1"]').getByRole('button', { name: 'Go back to this version' })
  await goBack.click()

  // Keep editing: nothing sent, the typing stays.
  const discard = page.getByRole('alertdialog', { name: 'Discard your changes?' })
  await discard.getByText('What you changed in “English ivy” has not been saved.').waitFor()
  await discard.getByRole('button', { name: 'Keep editing' }).click()
  assert.equal(await name.inputValue(), 'English ivy, variegated')
  assert.ok(await goBack.evaluate((b) => b === document.activeElement), 'focus is back on Go back')
  assert.deepEqual(staff.requests.filter((r) => r.includes('/revert')), [])

  // Discard, then the confirmation; while it is open another till changes the plant.
  await goBack.click()
  await discard.getByRole('button', { name: 'Discard changes' }).click()
  const sure = page.getByRole('alertdialog', { name: 'Go back to this version?' })
  await sure.waitFor()
  await write(staff, 'PATCH', `/v3/plant/${id}`, { category: 'ivies' }, anna)
  await editor.locator('li[data-version="3"]').waitFor()
  await sure.getByRole('button', { name: 'Go back' }).click()
  await editor.locator('#history-alert').filter({ hasText: 'Someone changed “English ivy” just now, so it was not put back. It is shown as it is now: check its history and choose again.' }).waitFor()
  assert.equal(await name.inputValue(), 'English ivy, variegated', 'nothing typed is lost')
  assert.equal(await editor.getByRole('textbox', { name: 'Category' }).inputValue(), 'ivies', 'the plant as it is now')
  await editor.getByText('Changed by someone else.').waitFor()
  const now = (await staff.call('GET', `/v3/plant/${id}`)).body
  assert.deepEqual([now.name, now.category, now.status], ['English ivy', 'ivies', 'pending'], 'nothing was put back')
  assert.deepEqual(staff.requests.filter((r) => r.includes('/revert')).length, 1)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [412])
})

// The store's clock, moved by the test: a version made 12 days ago, kept 10 days.
let offset = 0
staffPageTest('a version the catalogue no longer keeps (older than HISTORY_RETENTION_DAYS, purged while the history was open) is too old to go back to, said plainly; a History whose script cannot be fetched says so', async (staff) => {
  const { page } = staff
  offset = -12 * DAY
  const aloe = await staff.add({ name: 'Aloe', price: '4' })
  offset = 0
  await write(staff, 'PATCH', `/v3/plant/${aloe.id}`, { price: '6' })
  await write(staff, 'PATCH', `/v3/plant/${aloe.id}`, { name: 'Aloe vera' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Aloe vera').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  const toggle = editor.getByRole('button', { name: 'History', exact: true })
  // The History part's script cannot be fetched (the connection dropped): said where the versions would be.
  const part = (u: URL): boolean => u.pathname === '/page/history-editor.js'
  await page.route(part, (route) => route.abort())
  await toggle.click()
  await editor.getByRole('alert').filter({ hasText: 'The history could not be loaded. Check the connection, then reload the page.' }).waitFor()
  await page.unroute(part)
  await page.reload()
  await editor.waitFor()
  await toggle.click()
  const list = editor.locator('#history-list')
  await list.locator('li[data-version="1"]').waitFor()
  assert.deepEqual((await shown(list)).map((v) => [v.version, v.goBack]), [[3, false], [2, true], [1, true]])

  // The hourly purge runs: version 1 is 12 days old.
  await (staff.app.store as unknown as { purge (): Promise<void> | void }).purge()
  assert.deepEqual((await staff.call('GET', `/v3/plant/${aloe.id}/history`)).body.items.map((e: any) => e.version), [3, 2])
  await list.locator('li[data-version="1"]').getByRole('button', { name: 'Go back to this version' }).click()
  await page.getByRole('alertdialog', { name: 'Go back to this version?' }).getByRole('button', { name: 'Go back' }).click()
  await editor.locator('#history-alert').filter({ hasText: 'That version is too old to go back to: the catalogue no longer keeps it.' }).waitFor()
  await list.locator('li[data-version="1"]').waitFor({ state: 'detached' })
  assert.deepEqual((await shown(list)).map((v) => v.version), [3, 2])
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'history-toggle', 'focus is not lost with the version')
  const now = await staff.call('GET', `/v3/plant/${aloe.id}`)
  assert.deepEqual([now.headers.etag, now.body.name, now.body.price], [`"${aloe.id}.3"`, 'Aloe vera', '6.00'])
  // Chromium logs the script's fetch cut short; nothing else may reach the console.
  assert.deepEqual(unexpectedErrors(staff.errors).filter((e) => !/net::ERR_/.test(e)), [])
  assert.deepEqual(await staff.refusedStatuses(), [404])
}, { store: { historyRetentionMs: 10 * DAY, now: () => Date.now() + offset } })
