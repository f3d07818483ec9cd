import assert from 'node:assert/strict'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { giveKey, listShown, OUTPUT, plantButton, png, staffPageTests, unexpectedErrors } from '../helpers/staff-page.js'

// Nothing done by mistake on the staff page: every change offers Undo, the rows acted on (here or
// by another till) stay in place so the next row never slides under the pointer, and closing an
// editor with unsaved typing asks first.

const staffPageTest = staffPageTests()

/** The ids of the rows on screen, top to bottom. */
const rowIds = (page: Page) => page.locator('#plants > li').evaluateAll((rows) => rows.map((r) => Number((r as HTMLElement).dataset.id)))

/** The centre of a row's "Mark sold" button, where a pointer would be. */
async function soldButtonAt (page: Page, name: string): Promise<{ x: number, y: number }> {
  const box = await page.getByRole('button', { name: `Mark sold: ${name}` }).boundingBox()
  assert.ok(box)
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 }
}

staffPageTest('under "For sale", two clicks on Mark sold sell one plant, another till\'s sale moves no row under the pointer, and Undo brings the sale back', async (staff, { engine }) => {
  const { page } = staff
  const plants = []
  for (const name of ['Calathea orbifolia', 'Calathea lancifolia', 'Echeveria elegans', 'Echeveria agavoides']) plants.push(await staff.add({ name, category: 'indoor' }))
  const [orbifolia, lancifolia, elegans, agavoides] = plants
  await page.goto(staff.url + '/')
  await page.getByRole('combobox', { name: 'Status', exact: true }).selectOption({ label: 'For sale' })
  await listShown(page, 'status=available')
  await plantButton(page, 'Calathea orbifolia').waitFor()
  const order = await rowIds(page)

  // Two clicks where the first plant's button is: the first sells it; the second finds no button for
  // the next plant there (its row did not move up), so nothing else is sold.
  const at = await soldButtonAt(page, 'Calathea orbifolia')
  await page.mouse.click(at.x, at.y)
  await giveKey(page)
  await page.getByRole('status').filter({ hasText: 'Marked “Calathea orbifolia” as sold.' }).waitFor()
  await page.locator(`#plants li[data-id="${orbifolia.id}"]`).getByText('Sold', { exact: true }).waitFor()
  await page.mouse.click(at.x, at.y)
  assert.deepEqual(await rowIds(page), order, 'the sold plant keeps its row under "For sale"')
  assert.equal((await staff.call('GET', `/v3/plant/${lancifolia.id}`)).body.status, 'available', 'the second click sold nothing')
  await page.screenshot({ path: join(OUTPUT, `browser-page-${engine.name}-sold-in-place-1280.png`) })

  // Undo, in the message: the plant is for sale again (written back with If-Match on the sale's version).
  await page.getByRole('button', { name: 'Undo', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Undone: “Calathea orbifolia” is available again.' }).waitFor()
  assert.equal((await staff.call('GET', `/v3/plant/${orbifolia.id}`)).body.status, 'available')

  // Another till sells the first Echeveria while the pointer rests on the second one's button: the
  // list follows the sale, but the row stays and the click sells the plant the pointer was on.
  const aimed = await soldButtonAt(page, 'Echeveria agavoides')
  assert.equal((await staff.call('PATCH', `/v3/plant/${elegans.id}`, { status: 'sold' })).status, 200)
  await page.locator(`#plants li[data-id="${elegans.id}"]`).getByText('Sold', { exact: true }).waitFor()
  assert.deepEqual(await soldButtonAt(page, 'Echeveria agavoides'), aimed, 'the button under the pointer did not move')
  await page.mouse.click(aimed.x, aimed.y)
  await page.getByRole('status').filter({ hasText: 'Marked “Echeveria agavoides” as sold.' }).waitFor()
  assert.equal((await staff.call('GET', `/v3/plant/${agavoides.id}`)).body.status, 'sold')
  assert.equal((await staff.call('GET', `/v3/plant/${lancifolia.id}`)).body.status, 'available')
  assert.deepEqual(await rowIds(page), order)

  // The same sale undone after someone changed the plant again: refused, said plainly, their change kept.
  assert.equal((await staff.call('PATCH', `/v3/plant/${agavoides.id}`, { category: 'succulents' })).status, 200)
  await page.getByRole('button', { name: 'Undo', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Not undone: someone changed “Echeveria agavoides” since.' }).waitFor()
  assert.equal((await staff.call('GET', `/v3/plant/${agavoides.id}`)).body.status, 'sold')

  // Reloading the list (here: choosing the filter again) lets the sold plants go.
  await page.getByRole('combobox', { name: 'Status', exact: true }).selectOption({ label: 'Any status' })
  await page.getByRole('combobox', { name: 'Status', exact: true }).selectOption({ label: 'For sale' })
  await plantButton(page, 'Echeveria elegans').waitFor({ state: 'detached' })
  assert.deepEqual(await rowIds(page), [orbifolia.id, lancifolia.id])
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  for (const status of await staff.refusedStatuses()) assert.equal(status, 412)
})

staffPageTest('a change from elsewhere while the list loads from scratch does not keep the rows of the list before', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  const ivy = await staff.add({ name: 'Ivy' })
  const palm = await staff.add({ name: 'Palm' })
  await page.goto(staff.url + '/')
  await page.getByRole('combobox', { name: 'Status', exact: true }).selectOption({ label: 'For sale' })
  await listShown(page, 'status=available')
  await plantButton(page, 'Ivy').waitFor()
  // Sold elsewhere: the row stays in place, marked sold, until the list loads from scratch.
  assert.equal((await staff.call('PATCH', `/v3/plant/${ivy.id}`, { status: 'sold' })).status, 200)
  await page.locator(`#plants li[data-id="${ivy.id}"]`).getByText('Sold', { exact: true }).waitFor()

  // The loads from scratch (another filter, then this one again) are held on the way, so none
  // shows; a change made elsewhere meanwhile loads the list again and overtakes them. That load must
  // still be from scratch: the rows on screen answer an older question.
  let release!: () => void
  const held = new Promise<void>((resolve) => { release = resolve })
  let holding = true
  await page.route((url) => url.pathname === '/v3/plant', async (route) => {
    if (!holding) return route.continue()
    await held
    await route.continue().catch(() => {}) // aborted by the page meanwhile
  })
  const status = page.getByRole('combobox', { name: 'Status', exact: true })
  await status.selectOption({ label: 'Any status' })
  await status.selectOption({ label: 'For sale' })
  await page.waitForFunction(() => document.querySelector('#plants')?.getAttribute('aria-busy') === 'true')
  const overtaking = page.waitForResponse((r) => new URL(r.url()).pathname === '/v3/plant')
  holding = false
  assert.equal((await staff.call('PATCH', `/v3/plant/${palm.id}`, { category: 'outdoor' })).status, 200)
  await overtaking
  release()
  await plantButton(page, 'Ivy').waitFor({ state: 'detached' })
  assert.deepEqual(await rowIds(page), [fern.id, palm.id])
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a save offers Undo, which writes the fields back; closing with unsaved typing asks first (Esc, Close, leaving the page)', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern', category: 'indoor', tags: ['shade'] })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Fern').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  const name = editor.getByRole('textbox', { name: 'Name', exact: true })
  await name.fill('Boston fern')
  await editor.getByRole('textbox', { name: 'Category' }).fill('ferns')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Saved “Boston fern”.' }).waitFor()
  await page.getByRole('button', { name: 'Undo', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Undone: “Boston fern” is back as it was.' }).waitFor()
  const back = (await staff.call('GET', `/v3/plant/${fern.id}`)).body
  assert.deepEqual([back.name, back.category, back.tags], ['Fern', 'indoor', ['shade']])
  await plantButton(page, 'Fern').waitFor()

  // Esc with typing: the question; "Keep editing" keeps the dialog and the typing.
  await plantButton(page, 'Fern').click()
  await name.fill('Fern, typed')
  await page.keyboard.press('Escape')
  const ask = page.getByRole('alertdialog', { name: 'Discard your changes?' })
  await ask.getByText('What you changed in “Fern” has not been saved.').waitFor()
  await ask.getByRole('button', { name: 'Keep editing' }).click()
  assert.ok(await editor.isVisible())
  assert.equal(await name.inputValue(), 'Fern, typed')
  // Esc twice (a second Esc in a row is handled by the browser alone): still asked, still there.
  await page.keyboard.press('Escape')
  await ask.waitFor()
  await page.keyboard.press('Escape')
  await ask.waitFor({ state: 'hidden' })
  await page.keyboard.press('Escape')
  await ask.waitFor()
  await ask.getByRole('button', { name: 'Keep editing' }).click()
  assert.equal(await name.inputValue(), 'Fern, typed')

  // Leaving the page: the browser's own question.
  const leaving = page.waitForEvent('dialog')
  void page.close({ runBeforeUnload: true })
  assert.equal((await leaving).type(), 'beforeunload')
  staff.errors.splice(staff.errors.findIndex((e) => e.startsWith('unexpected beforeunload')), 1)

  // Close, then Discard: closed, nothing saved.
  await editor.getByRole('button', { name: 'Close' }).click()
  await ask.getByRole('button', { name: 'Discard changes' }).click()
  await editor.waitFor({ state: 'hidden' })
  assert.equal((await staff.call('GET', `/v3/plant/${fern.id}`)).body.name, 'Fern')
  // Nothing typed: Esc closes at once (once the editor is there: it opens when the plant is read).
  await plantButton(page, 'Fern').click()
  await editor.waitFor()
  await page.keyboard.press('Escape')
  await editor.waitFor({ state: 'hidden' })
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a removed photo comes back with Undo, in its place', async (staff) => {
  const { page } = staff
  const olive = await staff.add({ name: 'Olive tree' })
  await staff.addPhoto(olive.id, png(320, 240))
  await staff.addPhoto(olive.id, png(200, 300))
  const [cover, second] = (await staff.call('GET', `/v3/plant/${olive.id}`)).body.photos
  await page.goto(staff.url + '/')
  await plantButton(page, 'Olive tree').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByRole('button', { name: 'Remove photo 1' }).click()
  const sure = page.getByRole('alertdialog', { name: 'Remove this photo?' })
  await sure.getByText('The cover photo will be removed. You can undo this while the plant is open.').waitFor()
  await sure.getByRole('button', { name: 'Remove', exact: true }).click()
  await editor.getByText('Photo removed.').waitFor()
  assert.deepEqual((await staff.call('GET', `/v3/plant/${olive.id}`)).body.photos.map((p: any) => p.id), [second.id])
  await editor.getByRole('button', { name: 'Undo removing the photo' }).click()
  await editor.getByText('Undone: the photo is back.').waitFor()
  const photos = (await staff.call('GET', `/v3/plant/${olive.id}`)).body.photos
  assert.equal(photos.length, 2)
  assert.deepEqual([photos[0].width, photos[0].height, photos[1].id], [cover.width, cover.height, second.id], 'the cover is the cover again')
  await editor.getByRole('img', { name: 'Cover photo of Olive tree' }).waitFor()
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('with the keyboard, a plant deleted from its editor leaves the focus on the next plant\'s name, not at the top of the list', async (staff) => {
  const { page } = staff
  const plants = []
  for (const name of ['Aloe vera', 'Begonia maculata', 'Calathea orbifolia', 'Dracaena marginata']) plants.push(await staff.add({ name }))
  const [, , calathea, dracaena] = plants
  await page.goto(staff.url + '/')
  await plantButton(page, 'Calathea orbifolia').focus()
  await page.keyboard.press('Enter')
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByRole('button', { name: 'Delete…' }).focus()
  await page.keyboard.press('Enter')
  await page.getByRole('alertdialog', { name: 'Delete this plant?' }).getByRole('button', { name: 'Delete' }).focus()
  await page.keyboard.press('Enter')
  await page.getByRole('status').filter({ hasText: 'Deleted “Calathea orbifolia”.' }).waitFor()
  // The deleted plant's row stays where it was, without buttons: focus moves down to the next name.
  await page.locator(`#plants li.gone[data-id="${calathea.id}"]`).waitFor()
  await page.waitForFunction((id) => document.activeElement?.closest('li')?.dataset.id === String(id), dracaena.id)
  assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.role), 'open')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('the message with Undo never covers the page buttons: scrolled to the end of the list, they are clear of it (1280 and 375 px)', async (staff, { t, browser }) => {
  for (let i = 1; i <= 22; i++) await staff.add({ name: `Seedling ${String(i).padStart(2, '0')}` })
  const phone = await browser.newContext({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true })
  t.after(() => phone.close())
  for (const [page, name] of [[staff.page, 'Seedling 20'], [await phone.newPage(), 'Seedling 19']] as const) {
    await page.goto(staff.url + '/')
    await page.getByRole('button', { name: `Mark sold: ${name}` }).click()
    await giveKey(page)
    await page.getByRole('status').filter({ hasText: `Marked “${name}” as sold.` }).waitFor()
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight))
    const [toast, next] = await Promise.all([page.locator('#toast'), page.getByRole('button', { name: 'Next page', exact: true })].map((l) => l.boundingBox()))
    assert.ok(toast !== null && next !== null)
    // At 375 px the message is in the header's flow, above the page: apart from the buttons all the same.
    assert.ok(next.y + next.height <= toast.y || toast.y + toast.height <= next.y, `at ${page.viewportSize()?.width} px the Next page button (${next.y}–${next.y + next.height}) and the message (${toast.y}–${toast.y + toast.height}) overlap`)
  }
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a sold plant goes back on sale from its row in one click, with Undo; a second click where Mark sold was does not take a sale back', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern', status: 'sold' })
  const ivy = await staff.add({ name: 'Ivy' })
  await page.goto(staff.url + '/')
  const fernRow = page.locator(`#plants li[data-id="${fern.id}"]`)
  await fernRow.getByText('Sold', { exact: true }).waitFor()
  await page.getByRole('button', { name: 'Mark available: Fern', exact: true }).click()
  await giveKey(page)
  await page.getByRole('status').filter({ hasText: 'Marked “Fern” as available.' }).waitFor()
  await fernRow.getByText('Available', { exact: true }).waitFor()
  assert.equal((await staff.call('GET', `/v3/plant/${fern.id}`)).body.status, 'available')
  await page.getByRole('button', { name: 'Undo', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Undone: “Fern” is sold again.' }).waitFor()
  assert.equal((await staff.call('GET', `/v3/plant/${fern.id}`)).body.status, 'sold')

  // Sold here, the row offers no Mark available until the list loads again: a double click sells once.
  const at = await soldButtonAt(page, 'Ivy')
  await page.mouse.click(at.x, at.y)
  await page.getByRole('status').filter({ hasText: 'Marked “Ivy” as sold.' }).waitFor()
  await page.locator(`#plants li[data-id="${ivy.id}"]`).getByText('Sold', { exact: true }).waitFor()
  await page.mouse.click(at.x, at.y)
  assert.equal(await page.getByRole('button', { name: 'Mark available: Ivy', exact: true }).count(), 0)
  assert.equal((await staff.call('GET', `/v3/plant/${ivy.id}`)).body.status, 'sold')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('Ctrl+Z undoes what the message offers from the keyboard, wherever the focus is, but in a box being typed in', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  await page.goto(staff.url + '/')
  await page.getByRole('button', { name: 'Mark sold: Fern', exact: true }).focus()
  await page.keyboard.press('Enter')
  await giveKey(page)
  await page.getByRole('status').filter({ hasText: 'Marked “Fern” as sold.' }).waitFor()
  assert.equal(await page.getByRole('button', { name: 'Undo', exact: true }).getAttribute('aria-keyshortcuts'), 'Control+Z Meta+Z')

  // In the search box, Ctrl+Z is the box's own: the sale stands.
  const search = page.getByRole('searchbox', { name: 'Search by name' })
  await search.focus()
  await page.keyboard.press('Control+z')
  assert.equal((await staff.call('GET', `/v3/plant/${fern.id}`)).body.status, 'sold')

  // Anywhere else (here, the plant's name in its row), Ctrl+Z undoes the sale and the focus stays.
  await plantButton(page, 'Fern').focus()
  await page.keyboard.press('Control+z')
  await page.getByRole('status').filter({ hasText: 'Undone: “Fern” is available again.' }).waitFor()
  assert.equal((await staff.call('GET', `/v3/plant/${fern.id}`)).body.status, 'available')
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Fern')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('the message never covers the row just acted on: a row at the foot of the window gets the message at the top, and nothing scrolls', async (staff) => {
  const { page } = staff
  for (let i = 1; i <= 12; i++) await staff.add({ name: `Seedling ${String(i).padStart(2, '0')}` })
  await page.setViewportSize({ width: 1280, height: 700 })
  await page.goto(staff.url + '/')
  const row = page.locator('#plants > li').filter({ has: page.getByRole('button', { name: 'Seedling 06', exact: true }) })
  await row.waitFor()
  // The row's bottom at the foot of the window, where the message shows.
  await row.evaluate((li) => window.scrollBy(0, li.getBoundingClientRect().bottom - window.innerHeight + 8))
  const scrolled = await page.evaluate(() => window.scrollY)
  await page.getByRole('button', { name: 'Mark sold: Seedling 06', exact: true }).click()
  await giveKey(page)
  await page.getByRole('status').filter({ hasText: 'Marked “Seedling 06” as sold.' }).waitFor()
  // Both measured in one task of the page: the sale's own change, coming back through the feed, may
  // draw the row again, and a row found by one call and measured by the next may be gone by then.
  const [bar, acted] = await page.evaluate(() => [
    document.getElementById('toast'),
    [...document.querySelectorAll('#plants > li')].find((li) => li.querySelector('[data-role="open"]')?.textContent === 'Seedling 06')
  ].map((node) => node ? { y: node.getBoundingClientRect().y, height: node.getBoundingClientRect().height } : null))
  assert.ok(bar !== null && bar.height > 0, 'the message is shown')
  assert.ok(acted !== null, 'the row is shown')
  assert.ok(acted.y + acted.height <= bar.y || bar.y + bar.height <= acted.y, `the message (${bar.y}–${bar.y + bar.height}) covers the row (${acted.y}–${acted.y + acted.height})`)
  assert.equal(await page.evaluate(() => window.scrollY), scrolled, 'the page did not scroll under the pointer')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})
