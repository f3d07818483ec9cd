import assert from 'node:assert/strict'
import type { Locator, Page } from 'playwright-core'
import { bothWidths, giveKey, listShown, openEditor, pageTimings, plantButton, staffPageTests, unexpectedErrors, type StaffPage } from '../helpers/staff-page.js'

// Stock on the staff page: each plant that tracks stock shows it in the list, and is sold a unit
// at a time ("Sell one", a sale movement at main with an Idempotency-Key; Undo returns the unit);
// the editor's Stock part receives and counts per place (a count is a compare and set: a sale made
// meanwhile is said, with the count as it is now, and the count saved on the second try); a
// low-stock filter; the movements in the plant's history. axe-clean at 1280 and 375 px.

const staffPageTest = staffPageTests()

type Headers = Record<string, string>

async function write (staff: StaffPage, method: string, path: string, body: unknown, headers: Headers = {}): Promise<any> {
  const res = await staff.call(method, path, body, headers)
  assert.ok(res.status === 200 || res.status === 201, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** A movement through the API, as another till would make it. */
const move = (staff: StaffPage, id: number, body: Record<string, unknown>, headers: Headers = {}): Promise<any> =>
  write(staff, 'POST', `/v3/plant/${id}/stock/movements`, body, headers)

/** A place in the store: the file's tests share a service, whose places stay (emptying the catalogue leaves them). */
async function place (staff: StaffPage, name: string): Promise<void> {
  const res = await staff.call('POST', '/v3/locations', { name })
  assert.ok(res.status === 201 || (res.status === 409 && /location-name-taken$/.test(res.body.type)), `${name}: ${res.status} ${JSON.stringify(res.body)}`)
}

/** The plant's ledger through the API, newest first. */
async function ledger (staff: StaffPage, id: number): Promise<Array<{ location: string, delta: number, reason: string, onHandAfter: number }>> {
  const res = await staff.call('GET', `/v3/plant/${id}/stock/movements?limit=100`)
  assert.equal(res.status, 200)
  return res.body.items.map((m: any) => ({ location: m.location, delta: m.delta, reason: m.reason, onHandAfter: m.onHandAfter }))
}

/** The plant's levels through the API: onHand by place. */
async function onHandAt (staff: StaffPage, id: number): Promise<Record<string, number>> {
  const res = await staff.call('GET', `/v3/plant/${id}/stock`)
  assert.equal(res.status, 200)
  return Object.fromEntries(res.body.items.map((l: any) => [l.location, l.onHand]))
}

const rowOf = (page: Page, id: number): Locator => page.locator(`#plants li[data-id="${id}"]`)

/** The editor's Stock table, row by row: place, on hand, reserved, available. */
const levelsShown = (editor: Locator) => editor.locator('#stock-rows tr').evaluateAll((rows) =>
  rows.map((r) => [...r.children].map((c) => c.textContent).join(' ')))

staffPageTest('stock shows beside each plant that tracks it; Sell one sells a unit at main with an Idempotency-Key, and Undo returns it', async (staff, { engine }) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  const ivy = await staff.add({ name: 'Ivy' })
  await move(staff, fern.id, { delta: 3, reason: 'received' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Fern').waitFor()
  await rowOf(page, fern.id).getByText('3 on hand, 3 available', { exact: true }).waitFor()
  assert.equal(await rowOf(page, ivy.id).locator('[data-role="stock"]').count(), 0, 'nothing for a plant that does not track stock')
  assert.equal(await rowOf(page, ivy.id).getByRole('button', { name: 'Mark sold: Ivy' }).count(), 1)
  assert.equal(await rowOf(page, fern.id).getByRole('button', { name: 'Mark sold: Fern' }).count(), 0, 'a tracked plant is sold a unit at a time')

  const sale = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`/v3/plant/${fern.id}/stock/movements`))
  await page.getByRole('button', { name: 'Sell one: Fern' }).click()
  await giveKey(page)
  const sent = await sale
  assert.deepEqual(sent.postDataJSON(), { delta: -1, reason: 'sale' })
  assert.match(sent.headers()['idempotency-key'] ?? '', /^page-[0-9a-f]{32}$/)
  await page.getByRole('status').filter({ hasText: 'Sold one “Fern”. 2 left.' }).waitFor()
  // The key asked for on the way, focus is back on the button that was pressed (its row drawn again).
  await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Sell one: Fern')
  await rowOf(page, fern.id).getByText('2 on hand, 2 available', { exact: true }).waitFor()
  assert.deepEqual((await ledger(staff, fern.id))[0], { location: 'main', delta: -1, reason: 'sale', onHandAfter: 2 })

  await page.getByRole('button', { name: 'Undo', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Undone: one “Fern” is back in stock. 3 available.' }).waitFor()
  await rowOf(page, fern.id).getByText('3 on hand, 3 available', { exact: true }).waitFor()
  assert.deepEqual((await ledger(staff, fern.id)).slice(0, 2), [
    { location: 'main', delta: 1, reason: 'return', onHandAfter: 3 },
    { location: 'main', delta: -1, reason: 'sale', onHandAfter: 2 }
  ])

  // The last unit sold: the plant is sold (its status follows its stock), and no Sell one is left.
  await move(staff, fern.id, { delta: -2, reason: 'sale' })
  await rowOf(page, fern.id).getByText('1 on hand, 1 available', { exact: true }).waitFor()
  await page.getByRole('button', { name: 'Sell one: Fern' }).click()
  await page.getByRole('status').filter({ hasText: 'Sold one “Fern”. None left.' }).waitFor()
  await rowOf(page, fern.id).getByText('None available', { exact: true }).waitFor()
  assert.equal(await rowOf(page, fern.id).getByRole('button', { name: 'Sell one: Fern' }).count(), 0)
  assert.equal((await staff.call('GET', `/v3/plant/${fern.id}`)).body.status, 'sold')
  await bothWidths(page, 'list with stock', `browser-page-stock-${engine.name}-list`)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(staff.refusals, [])
})

staffPageTest('the editor receives and counts per place; a count meeting a sale made meanwhile shows the count as it is now and saves on the second try', async (staff, { engine }) => {
  const { page } = staff
  await place(staff, 'greenhouse')
  const fern = await staff.add({ name: 'Fern', lowStockAt: 2 })
  await move(staff, fern.id, { delta: 5, reason: 'received' })
  const editor = await openEditor(staff, 'Fern', '5 on hand, 5 available. Low at 2 available or fewer.')
  assert.deepEqual(await levelsShown(editor), ['main 5 0 5'])

  // Receive at the greenhouse (Enter in the box receives; it does not save the plant).
  await editor.getByRole('combobox', { name: 'Place' }).selectOption('greenhouse')
  await editor.getByRole('textbox', { name: 'Units received' }).fill('4')
  await editor.getByRole('textbox', { name: 'Units received' }).press('Enter')
  await editor.getByRole('status').filter({ hasText: 'Received 4 of “Fern” at greenhouse. 4 on hand at greenhouse.' }).waitFor()
  await editor.getByText('9 on hand, 9 available. Low at 2 available or fewer.', { exact: true }).waitFor()
  assert.deepEqual(await onHandAt(staff, fern.id), { main: 5, greenhouse: 4 })
  assert.ok(await editor.isVisible(), 'the editor stays open')
  // Units to receive must be a whole number, 1 or more: said beside the box, nothing sent.
  await editor.getByRole('textbox', { name: 'Units received' }).fill('0')
  await editor.getByRole('button', { name: 'Receive' }).click()
  await editor.getByText('Enter a whole number of units, 1 or more.').waitFor()

  // A count at main, while another till sells one there: the count, made against 5 on hand, is
  // refused; the part says the count is now 4, and the same count saved again is taken.
  await editor.getByRole('combobox', { name: 'Place' }).selectOption('main')
  await editor.getByRole('textbox', { name: 'Units counted' }).fill('7')
  let sold = false
  await page.route(`**/v3/plant/${fern.id}/stock/movements`, async (route) => {
    if (!sold && route.request().method() === 'POST') {
      sold = true
      await move(staff, fern.id, { delta: -1, reason: 'sale' })
    }
    await route.continue()
  })
  await editor.getByRole('button', { name: 'Save count' }).click()
  await editor.getByRole('alert').filter({ hasText: 'Not saved: the count at main changed while you were counting (someone sold or received there). It is now 4 on hand. Count again, then save your count.' }).waitFor()
  assert.deepEqual(await onHandAt(staff, fern.id), { main: 4, greenhouse: 4 }, 'the refused count moved nothing')
  assert.equal(await editor.getByRole('textbox', { name: 'Units counted' }).inputValue(), '7', 'what was counted stays')
  await bothWidths(page, 'editor with a count refused', `browser-page-stock-${engine.name}-count-refused`)
  await editor.getByRole('button', { name: 'Save count' }).click()
  await editor.getByRole('status').filter({ hasText: 'Counted 7 of “Fern” at main (was 4).' }).waitFor()
  assert.deepEqual(await onHandAt(staff, fern.id), { main: 7, greenhouse: 4 })
  assert.deepEqual((await ledger(staff, fern.id))[0], { location: 'main', delta: 3, reason: 'count', onHandAfter: 7 })
  await editor.getByText('11 on hand, 11 available. Low at 2 available or fewer.', { exact: true }).waitFor()
  assert.deepEqual(await levelsShown(editor), ['greenhouse 4 0 4', 'main 7 0 7'], 'by name')
  // The movements made here are not reported as someone else's change.
  assert.equal(await editor.getByText('Someone else just changed this plant', { exact: false }).count(), 0)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [409])
})

staffPageTest('a count below what web checkouts hold at a place is refused, saying how many they hold and what staff can save; the refusal goes when a field\'s error shows next', async (staff) => {
  const palm = await staff.add({ name: 'Palm' })
  await move(staff, palm.id, { delta: 2, reason: 'received' })
  assert.equal((await staff.call('POST', '/v3/reservations', { lines: [{ plant: palm.id, quantity: 2 }], ttlSeconds: 900 })).status, 201)
  const editor = await openEditor(staff, 'Palm', /^2 on hand, 0 available, 2 reserved\./)
  await editor.getByRole('textbox', { name: 'Units counted' }).fill('1')
  await editor.getByRole('button', { name: 'Save count' }).click()
  const refusal = editor.getByRole('alert').filter({ hasText: 'Not saved: 2 at main held for web checkouts cannot be counted away. Save at least 2, or count again once those checkouts are done or let go.' })
  await refusal.waitFor()
  assert.deepEqual(await onHandAt(staff, palm.id), { main: 2 })
  await editor.getByRole('textbox', { name: 'Units received' }).fill('ten')
  await editor.getByRole('button', { name: 'Receive' }).click()
  await editor.locator('#s-received-error').filter({ hasText: 'Enter a whole number of units, 1 or more.' }).waitFor()
  assert.equal(await refusal.count(), 0, 'the refusal went when the field\'s error showed')
})

staffPageTest('the low-stock filter lists the plants at or below their threshold, beside the other filters and in the address', async (staff, { engine }) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern', lowStockAt: 3 })
  const ivy = await staff.add({ name: 'Ivy' })
  await staff.add({ name: 'Palm' })
  await move(staff, fern.id, { delta: 2, reason: 'received' })
  await move(staff, ivy.id, { delta: 10, reason: 'received' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Palm').waitFor()
  await rowOf(page, fern.id).getByText('Low stock', { exact: true }).waitFor()
  assert.equal(await rowOf(page, ivy.id).getByText('Low stock', { exact: true }).count(), 0)

  // A threshold set in the editor ("Low stock at", saved with the plant's fields); one that is not a
  // whole number is refused in staff's words, not the API's ("must be an integer or null").
  await plantButton(page, 'Ivy').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByRole('textbox', { name: 'Low stock at' }).fill('ten')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await editor.locator('#f-lowStockAt-error').filter({ hasText: 'Enter a whole number of units, 0 or more, or leave it empty for never.' }).waitFor()
  await editor.getByRole('textbox', { name: 'Low stock at' }).fill('10')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Saved “Ivy”.' }).waitFor()
  assert.equal((await staff.call('GET', `/v3/plant/${ivy.id}`)).body.lowStockAt, 10)
  await rowOf(page, ivy.id).getByText('Low stock', { exact: true }).waitFor()

  await page.getByRole('combobox', { name: 'Stock' }).selectOption({ label: 'Low stock' })
  await listShown(page, 'lowStock=true')
  assert.deepEqual(await page.locator('#plants > li').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.id)), [String(fern.id), String(ivy.id)])
  assert.equal(new URL(page.url()).searchParams.get('stock'), 'low')
  await page.reload()
  await listShown(page, 'lowStock=true')
  assert.equal(await page.getByRole('combobox', { name: 'Stock' }).inputValue(), 'low')
  await bothWidths(page, 'low-stock list', `browser-page-stock-${engine.name}-low`)
  await page.getByRole('combobox', { name: 'Stock' }).selectOption({ label: 'Any stock' })
  await plantButton(page, 'Palm').waitFor()
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a plant\'s history shows each stock movement: what it was, who made it, and the units on hand after', async (staff) => {
  const till = (await write(staff, 'POST', '/v3/keys', { name: 'till-3', scope: 'sell' })).secret
  const fern = await staff.add({ name: 'Fern' })
  await place(staff, 'greenhouse')
  await move(staff, fern.id, { delta: 5, reason: 'received', location: 'greenhouse' })
  await move(staff, fern.id, { delta: -1, reason: 'sale', location: 'greenhouse' }, { authorization: `Bearer ${till}` })
  // A web shop's checkout holds 2, then lets them go.
  const held = await write(staff, 'POST', '/v3/reservations', { lines: [{ plant: fern.id, quantity: 2, location: 'greenhouse' }], ttlSeconds: 900 }, { authorization: `Bearer ${till}` })
  assert.equal((await staff.call('DELETE', `/v3/reservations/${held.id}`, undefined, { authorization: `Bearer ${till}` })).status, 204)
  const editor = await openEditor(staff, 'Fern')
  await editor.getByRole('button', { name: 'History', exact: true }).click()
  const list = editor.locator('#history-list')
  await list.locator(':scope > li').nth(4).waitFor()
  const versions = await list.locator(':scope > li').evaluateAll((rows) => rows.map((row) => ({
    line: row.querySelector('.version-line')?.textContent ?? '',
    changes: [...row.querySelectorAll('.version-changes li')].map((li) => li.textContent)
  })))
  // Where and how many, and who in staff's words: the test's key is one set where the catalogue runs (env-1 to the service).
  assert.deepEqual(versions.slice(0, 2).map((v) => [v.line.replace(/ on .* by /, ' … by '), v.changes]), [
    ['2 held at greenhouse for a checkout let go … by till-3', ['Total on hand: 4 → 4']],
    ['2 held at greenhouse for a checkout … by till-3', ['Total on hand: 4 → 4 (2 available)']]
  ])
  assert.match(versions[2]!.line, /^Sold 1 at greenhouse on .* by till-3$/)
  assert.deepEqual(versions[2]!.changes, ['Total on hand: 5 → 4'])
  assert.match(versions[3]!.line, /^Received 5 at greenhouse on .* with a key set up where the catalogue runs$/)
  assert.deepEqual(versions[3]!.changes, ['Total on hand: not tracked → 5'])

  // A count made here follows at once, with the page's key as its actor.
  await editor.getByRole('combobox', { name: 'Place' }).selectOption('greenhouse')
  await editor.getByRole('textbox', { name: 'Units counted' }).fill('2')
  await editor.getByRole('button', { name: 'Save count' }).click()
  await list.locator(':scope > li').nth(5).waitFor()
  assert.match(await list.locator('.version-line').first().innerText(), /^Stock counted at greenhouse on .* with a key set up where the catalogue runs$/)
  assert.deepEqual(await list.locator(':scope > li').first().locator('.version-changes li').allInnerTexts(), ['Total on hand: 4 → 2'])
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a count is conditional on the level staff saw when they began it: a sale the live stream shows meanwhile is said beside the box, the save is refused, and saving again puts the count over it', async (staff, { engine }) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  await move(staff, fern.id, { delta: 15, reason: 'received' })
  const editor = await openEditor(staff, 'Fern', '15 on hand, 15 available.')
  await editor.getByRole('textbox', { name: 'Units counted' }).fill('10')
  // A till sells one while staff count: the part follows the stream, and says so beside the count.
  await move(staff, fern.id, { delta: -1, reason: 'sale' })
  await editor.getByText('14 on hand, 14 available.', { exact: true }).waitFor()
  const moved = 'A sale at main moved it from 15 to 14 on hand since you began: check your count.'
  await editor.getByRole('status').filter({ hasText: moved }).waitFor()
  assert.match(await editor.getByRole('textbox', { name: 'Units counted' }).getAttribute('aria-describedby') ?? '', /s-counted-moved/)
  await bothWidths(page, 'editor with a count overtaken by a sale', `browser-page-stock-${engine.name}-count-moved`)

  const movement = (): Promise<any> => page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`/v3/plant/${fern.id}/stock/movements`)).then((r) => r.postDataJSON())
  let sent = movement()
  await editor.getByRole('button', { name: 'Save count' }).click()
  assert.deepEqual(await sent, { set: 10, expected: 15, reason: 'count', location: 'main' }, 'expected: what staff saw when they began')
  await editor.getByRole('alert').filter({ hasText: 'Not saved: the count at main changed while you were counting (someone sold or received there). It is now 14 on hand. Count again, then save your count.' }).waitFor()
  assert.deepEqual(await onHandAt(staff, fern.id), { main: 14 }, 'the sale is not overwritten')
  assert.equal(await editor.getByText(moved).count(), 0, 'the alert says it now')
  assert.equal(await editor.getByRole('textbox', { name: 'Units counted' }).inputValue(), '10')

  // Saving again is the explicit choice: over the count shown now.
  sent = movement()
  await editor.getByRole('button', { name: 'Save count' }).click()
  assert.deepEqual(await sent, { set: 10, expected: 14, reason: 'count', location: 'main' })
  await editor.getByRole('status').filter({ hasText: 'Counted 10 of “Fern” at main (was 14).' }).waitFor()
  assert.deepEqual((await ledger(staff, fern.id)).slice(0, 2), [
    { location: 'main', delta: -4, reason: 'count', onHandAfter: 10 },
    { location: 'main', delta: -1, reason: 'sale', onHandAfter: 14 }
  ])
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [409])
})

staffPageTest('the editor of a plant that tracks stock offers no Mark sold, and its status says it follows stock, yet can be held as Pending; a plant starts tracking while open', async (staff, { engine }) => {
  const { page } = staff
  const ivy = await staff.add({ name: 'Ivy' })
  const editor = await openEditor(staff, 'Ivy')
  const status = editor.getByRole('combobox', { name: 'Status' })
  await editor.getByRole('button', { name: 'Mark sold', exact: true }).waitFor()
  assert.equal(await status.isDisabled(), false, 'not tracked: the status is set by hand')

  // Its first movement, from the Stock part: from now on the status follows the stock.
  await editor.getByRole('textbox', { name: 'Units received' }).fill('3')
  await editor.getByRole('button', { name: 'Receive' }).click()
  await editor.getByRole('status').filter({ hasText: 'Received 3 of “Ivy” at main.' }).waitFor()
  await editor.getByRole('button', { name: 'Mark sold', exact: true }).waitFor({ state: 'hidden' })
  assert.match(await status.evaluate((s) => s.getAttribute('aria-describedby')!.split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ')),
    /^Follows stock: sold when none is available, available again when some is\. Pending stays until you change it \(it does not stop sales\)\./)
  await bothWidths(page, 'editor of a plant whose status follows its stock', `browser-page-stock-${engine.name}-follows`)
  await editor.getByRole('button', { name: 'Close' }).click()

  // Opened again (a tracked plant from the start), the same; another field still saves.
  await plantButton(page, 'Ivy').click()
  await editor.getByText('3 on hand, 3 available.', { exact: true }).waitFor()
  assert.equal(await editor.getByRole('button', { name: 'Mark sold', exact: true }).count(), 0)
  await editor.getByRole('textbox', { name: 'Category' }).fill('Climbers')
  const patch = page.waitForRequest((r) => r.method() === 'PATCH')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  assert.deepEqual((await patch).postDataJSON(), { category: 'Climbers' })
  await page.getByRole('status').filter({ hasText: 'Saved “Ivy”.' }).waitFor()

  // A hold set by hand, as the API allows (stock never moves pending): the select is there for it.
  await plantButton(page, 'Ivy').click()
  await editor.getByText('3 on hand, 3 available.', { exact: true }).waitFor()
  assert.equal(await status.isDisabled(), false)
  await status.selectOption({ label: 'Pending' })
  // Its answer, not the message: the message of the save before may still show.
  const saved = page.waitForResponse((r) => r.request().method() === 'PATCH')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  assert.deepEqual((await saved).request().postDataJSON(), { status: 'pending' })
  assert.equal((await saved).status(), 200)
  assert.equal((await staff.call('GET', `/v3/plant/${ivy.id}`)).body.status, 'pending')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(staff.refusals, [])
})

staffPageTest('Sell one sells where the units are when main has none and one place has some; with several it sells nothing and says why in an alert; a double click sells once', async (staff, { engine }) => {
  const { page } = staff
  await place(staff, 'greenhouse')
  await place(staff, 'backroom')
  const fern = await staff.add({ name: 'Fern' })
  const palm = await staff.add({ name: 'Palm' })
  const ivy = await staff.add({ name: 'Ivy' })
  await move(staff, fern.id, { delta: 3, reason: 'received', location: 'greenhouse' })
  await move(staff, palm.id, { delta: 2, reason: 'received', location: 'greenhouse' })
  await move(staff, palm.id, { delta: 1, reason: 'received', location: 'backroom' })
  await move(staff, ivy.id, { delta: 5, reason: 'received' })
  await page.goto(staff.url + '/')

  await page.getByRole('button', { name: 'Sell one: Fern' }).click()
  await giveKey(page)
  await page.getByRole('status').filter({ hasText: 'Sold one “Fern” at greenhouse. 2 left.' }).waitFor()
  assert.deepEqual((await ledger(staff, fern.id))[0], { location: 'greenhouse', delta: -1, reason: 'sale', onHandAfter: 2 })
  await page.getByRole('button', { name: 'Undo', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Undone: one “Fern” is back in stock. 3 available.' }).waitFor()
  assert.deepEqual(await onHandAt(staff, fern.id), { greenhouse: 3 }, 'put back where it was sold')

  await page.getByRole('button', { name: 'Sell one: Palm' }).click()
  const refusal = page.locator('#toast').getByRole('alert')
  await refusal.filter({ hasText: '“Palm” was not sold: main has none, and backroom and greenhouse have some, so the page cannot tell which place it came from. Open the plant and sell it from its place.' }).waitFor()
  assert.equal(await page.locator('#toast').evaluate((t) => t.classList.contains('error')), true, 'in a refusal\'s colour')
  assert.equal(await page.locator('#message').textContent(), '', 'not in the line that says what succeeded')
  assert.deepEqual(await onHandAt(staff, palm.id), { greenhouse: 2, backroom: 1 }, 'nothing sold')
  await bothWidths(page, 'list with a sale refused', `browser-page-stock-${engine.name}-sale-refused`)

  // A double click sells one unit.
  await page.getByRole('button', { name: 'Sell one: Ivy' }).dblclick()
  await page.getByRole('status').filter({ hasText: 'Sold one “Ivy”. 4 left.' }).waitFor()
  await rowOf(page, ivy.id).getByText('4 on hand, 4 available', { exact: true }).waitFor()
  assert.deepEqual((await ledger(staff, ivy.id)).map((m) => m.reason), ['sale', 'received'])
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [409, 409])
})

staffPageTest('the list sorts by stock, least or most first, and the address keeps it', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  const ivy = await staff.add({ name: 'Ivy' })
  const palm = await staff.add({ name: 'Palm' })
  await move(staff, fern.id, { delta: 9, reason: 'received' })
  await move(staff, ivy.id, { delta: 2, reason: 'received' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Palm').waitFor()
  const order = (): Promise<Array<string | undefined>> => page.locator('#plants > li').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.id))
  await page.getByRole('combobox', { name: 'Sort by' }).selectOption({ label: 'Stock (least first)' })
  await listShown(page, 'sort=available')
  assert.deepEqual(await order(), [ivy.id, fern.id, palm.id].map(String), 'plants that do not track stock last')
  assert.equal(new URL(page.url()).searchParams.get('sort'), 'available')
  await page.getByRole('combobox', { name: 'Sort by' }).selectOption({ label: 'Stock (most first)' })
  await listShown(page, 'sort=-available')
  assert.deepEqual(await order(), [palm.id, fern.id, ivy.id].map(String), 'as the API orders them: untracked first')
  await page.reload()
  await listShown(page, 'sort=-available')
  assert.equal(await page.getByRole('combobox', { name: 'Sort by' }).inputValue(), '-available')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('the Stock filter\'s In stock and Out of stock list the tracked plants with some available and with none; untracked plants are in neither', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  const ivy = await staff.add({ name: 'Ivy' })
  await staff.add({ name: 'Palm' })
  await move(staff, fern.id, { delta: 2, reason: 'received' })
  await move(staff, ivy.id, { delta: 1, reason: 'received' })
  await move(staff, ivy.id, { delta: -1, reason: 'sale' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Palm').waitFor()
  const ids = (): Promise<string[]> => page.locator('#plants > li').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.id!))
  await page.getByRole('combobox', { name: 'Stock' }).selectOption({ label: 'In stock' })
  await listShown(page, 'inStock=true')
  assert.deepEqual(await ids(), [String(fern.id)])
  assert.equal(new URL(page.url()).searchParams.get('stock'), 'in')
  await page.getByRole('combobox', { name: 'Stock' }).selectOption({ label: 'Out of stock' })
  await listShown(page, 'inStock=false')
  assert.deepEqual(await ids(), [String(ivy.id)])
  assert.equal(new URL(page.url()).searchParams.get('stock'), 'out')
  await page.reload()
  await listShown(page, 'inStock=false')
  assert.equal(await page.getByRole('combobox', { name: 'Stock' }).inputValue(), 'out')
  assert.deepEqual(await ids(), [String(ivy.id)])
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('the row\'s refusal sends staff to the plant, whose Stock part sells one at the place they choose (a sale there with an Idempotency-Key, Undo returns it there); the place box starts where the units are', async (staff, { engine }) => {
  const { page } = staff
  await place(staff, 'greenhouse')
  await place(staff, 'backroom')
  const palm = await staff.add({ name: 'Palm' })
  await move(staff, palm.id, { delta: 2, reason: 'received', location: 'greenhouse' })
  await move(staff, palm.id, { delta: 1, reason: 'received', location: 'backroom' })
  // The refusal would stay for as long as staff take here: it goes because they acted, not with time.
  await pageTimings(page, { messageMs: 600_000 })
  await page.goto(staff.url + '/')
  await page.getByRole('button', { name: 'Sell one: Palm' }).click()
  await giveKey(page)
  await page.locator('#toast').getByRole('alert').filter({ hasText: 'Open the plant and sell it from its place.' }).waitFor()

  await plantButton(page, 'Palm').click()
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByText('3 on hand, 3 available.', { exact: true }).waitFor()
  assert.deepEqual(await levelsShown(editor), ['backroom 1 0 1', 'greenhouse 2 0 2'])
  assert.deepEqual(await editor.locator('#stock-sell').getByRole('button').allInnerTexts(), ['Sell one at backroom', 'Sell one at greenhouse'])
  // Main is not among its places: the place box starts on one that is.
  assert.equal(await editor.getByRole('combobox', { name: 'Place' }).inputValue(), 'backroom')

  const sale = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`/v3/plant/${palm.id}/stock/movements`))
  await editor.getByRole('button', { name: 'Sell one at greenhouse' }).click()
  const sent = await sale
  assert.deepEqual(sent.postDataJSON(), { delta: -1, reason: 'sale', location: 'greenhouse' })
  assert.match(sent.headers()['idempotency-key'] ?? '', /^page-[0-9a-f]{32}$/)
  await editor.getByRole('status').filter({ hasText: 'Sold one “Palm” at greenhouse. 1 on hand at greenhouse.' }).waitFor()
  await editor.getByText('2 on hand, 2 available.', { exact: true }).waitFor()
  // Sold from its place: the row's refusal is old news, not left dimmed behind the editor.
  assert.deepEqual(await page.locator('#toast').evaluate((t) => [t.classList.contains('shown'), t.querySelector('[role="alert"]')?.textContent]), [false, ''])
  assert.deepEqual((await ledger(staff, palm.id))[0], { location: 'greenhouse', delta: -1, reason: 'sale', onHandAfter: 1 })
  const undo = editor.getByRole('button', { name: 'Undo the sale' })
  await page.waitForFunction(() => document.activeElement?.id === 's-undo')
  await bothWidths(page, 'editor with a sale at a chosen place', `browser-page-stock-${engine.name}-sell-here`)
  await undo.click()
  await editor.getByRole('status').filter({ hasText: 'Undone: one “Palm” is back at greenhouse. 2 on hand at greenhouse.' }).waitFor()
  await undo.waitFor({ state: 'hidden' })
  await page.waitForFunction(() => document.activeElement?.textContent === 'Sell one at greenhouse')
  assert.deepEqual(await onHandAt(staff, palm.id), { backroom: 1, greenhouse: 2 }, 'put back where it was sold')
  assert.deepEqual((await ledger(staff, palm.id))[0], { location: 'greenhouse', delta: 1, reason: 'return', onHandAfter: 2 })

  // The last unit at a place sold: that place offers no sale.
  await editor.getByRole('button', { name: 'Sell one at backroom' }).click()
  await editor.getByRole('status').filter({ hasText: 'Sold one “Palm” at backroom. 0 on hand at backroom.' }).waitFor()
  await editor.getByText('2 on hand, 2 available.', { exact: true }).waitFor()
  assert.equal(await editor.getByRole('button', { name: 'Sell one at backroom' }).count(), 0)
  assert.equal(await editor.getByText('Someone else just changed this plant', { exact: false }).count(), 0)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [409])
})

staffPageTest('units typed to receive or count are not thrown away on Esc or Close without the question the other fields get', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  await move(staff, fern.id, { delta: 5, reason: 'received' })
  const editor = await openEditor(staff, 'Fern', '5 on hand, 5 available.')
  const ask = page.getByRole('alertdialog', { name: 'Discard your changes?' })
  for (const box of ['Units counted', 'Units received']) {
    const input = editor.getByRole('textbox', { name: box })
    await input.fill('4')
    await page.keyboard.press('Escape')
    await ask.getByText('The units you typed for “Fern” have not been received or counted.').waitFor()
    await ask.getByRole('button', { name: 'Keep editing' }).click()
    assert.ok(await editor.isVisible(), box)
    assert.equal(await input.inputValue(), '4', box)
    await editor.getByRole('button', { name: 'Close' }).click()
    await ask.getByRole('button', { name: 'Discard changes' }).click()
    await editor.waitFor({ state: 'hidden' })
    assert.deepEqual(await onHandAt(staff, fern.id), { main: 5 }, 'nothing moved')
    await plantButton(page, 'Fern').click()
    await editor.getByText('5 on hand, 5 available.', { exact: true }).waitFor()
    assert.equal(await input.inputValue(), '', `${box}: discarded`)
  }
  // Nothing typed: Esc closes at once.
  await page.keyboard.press('Escape')
  await editor.waitFor({ state: 'hidden' })
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('the Stock part\'s messages (a count that is not a number, a count refused) are brought into view above the editor\'s sticky buttons at 1280×900', async (staff) => {
  const fern = await staff.add({ name: 'Fern' })
  await move(staff, fern.id, { delta: 5, reason: 'received' })
  const editor = await openEditor(staff, 'Fern', '5 on hand, 5 available.')
  const bar = editor.locator('.sheet-actions')
  /** The message's foot is above the bar's top, and inside the window. */
  const clear = async (message: Locator, what: string): Promise<void> => {
    await message.waitFor()
    const [shown, buttons] = await Promise.all([message.boundingBox(), bar.boundingBox()])
    assert.ok(shown !== null && buttons !== null)
    assert.ok(shown.y + shown.height <= buttons.y + 1, `${what}: ${JSON.stringify(shown)} under the buttons at ${buttons.y}`)
    assert.ok(shown.y >= 0, what)
  }
  const counted = editor.getByRole('textbox', { name: 'Units counted' })
  /** Staff scrolled the editor until the count's box sits just above the buttons, and save it with Enter there. */
  const saveCount = async (): Promise<void> => {
    await editor.evaluate((dialog) => {
      const box = dialog.querySelector('#s-counted')!.getBoundingClientRect()
      dialog.scrollTop += box.bottom - (dialog.querySelector('.sheet-actions')!.getBoundingClientRect().top - 4)
    })
    await counted.press('Enter')
  }
  await counted.fill('many')
  await saveCount()
  await clear(editor.getByText('Enter a whole number of units, 0 or more.'), 'a count that is not a number')

  await counted.fill('3')
  await move(staff, fern.id, { delta: -1, reason: 'sale' })
  await editor.getByText('4 on hand, 4 available.', { exact: true }).waitFor()
  await saveCount()
  await clear(editor.getByRole('alert').filter({ hasText: 'Not saved: the count at main changed while you were counting' }), 'a count refused')
  await saveCount()
  await clear(editor.getByRole('status').filter({ hasText: 'Counted 3 of “Fern” at main (was 4).' }), 'a count saved')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [409])
})

staffPageTest('at 375 px each place\'s Sell one that gets the focus (by Tab, or after Undo the sale) is scrolled clear of the editor\'s sticky buttons', async (staff) => {
  const { page } = staff
  await page.setViewportSize({ width: 375, height: 812 })
  await place(staff, 'greenhouse')
  await place(staff, 'backroom')
  const palm = await staff.add({ name: 'Palm' })
  await move(staff, palm.id, { delta: 2, reason: 'received', location: 'greenhouse' })
  await move(staff, palm.id, { delta: 1, reason: 'received', location: 'backroom' })
  const editor = await openEditor(staff, 'Palm', '3 on hand, 3 available.')
  const bar = editor.locator('.sheet-actions')
  /** The focused button's foot is above the bar's top, and inside the window. */
  const clear = async (name: string, what: string): Promise<void> => {
    await page.waitForFunction((name) => document.activeElement?.textContent === name, name)
    // A resize is dispatched with the next frame, two frames on: measured once it has been handled.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))))
    const [shown, buttons] = await Promise.all([page.evaluate(() => document.activeElement!.getBoundingClientRect().toJSON()), bar.boundingBox()])
    assert.ok(buttons !== null)
    assert.ok(shown.bottom <= buttons.y + 1 && shown.top >= 0, `${what}: ${JSON.stringify(shown)}, the buttons at ${buttons.y}`)
  }
  // Staff scrolled until the first place's button sits just above the bar, the second under it; Tab goes to the second.
  await editor.evaluate((dialog) => {
    const first = dialog.querySelector('#stock-sell button')!.getBoundingClientRect()
    dialog.scrollTop += first.bottom - (dialog.querySelector('.sheet-actions')!.getBoundingClientRect().top - 4)
  })
  await editor.getByRole('button', { name: 'Sell one at backroom' }).focus()
  await page.keyboard.press('Tab')
  await clear('Sell one at greenhouse', 'reached by Tab')
  await page.keyboard.press('Enter')
  await editor.getByRole('status').filter({ hasText: 'Sold one “Palm” at greenhouse.' }).waitFor()
  await editor.getByRole('button', { name: 'Undo the sale' }).click()
  await clear('Sell one at greenhouse', 'after Undo the sale')
  // Sold again at 1280 px, the phone turned to 375: the focused Undo is still in view, above the bar.
  await page.setViewportSize({ width: 1280, height: 900 })
  await editor.getByRole('button', { name: 'Sell one at greenhouse' }).click()
  await clear('Undo the sale', 'Undo the sale at 1280 px')
  await page.setViewportSize({ width: 375, height: 812 })
  await clear('Undo the sale', 'Undo the sale once the window is 375 px wide')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a checkout that holds one plant at several places: its history lines name each place and its units', async (staff) => {
  const fern = await staff.add({ name: 'Fern' })
  await place(staff, 'greenhouse')
  await move(staff, fern.id, { delta: 2, reason: 'received' })
  await move(staff, fern.id, { delta: 3, reason: 'received', location: 'greenhouse' })
  const held = await write(staff, 'POST', '/v3/reservations', { lines: [{ plant: fern.id, quantity: 1 }, { plant: fern.id, quantity: 2, location: 'greenhouse' }], ttlSeconds: 900 })
  assert.equal((await staff.call('POST', `/v3/reservations/${held.id}/commit`, undefined)).status, 200)
  const editor = await openEditor(staff, 'Fern')
  await editor.getByRole('button', { name: 'History', exact: true }).click()
  const list = editor.locator('#history-list')
  await list.locator(':scope > li').nth(3).waitFor()
  const lines = await list.locator(':scope > li .version-line').allTextContents()
  assert.match(lines[0]!, /^Sold 3 at main \(1\) and greenhouse \(2\) on /)
  assert.match(lines[1]!, /^3 held at main \(1\) and greenhouse \(2\) for a checkout on /)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})
