import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { axe, bothWidths, giveKey, plantButton, staffPageTests, unexpectedErrors } from '../helpers/staff-page.js'

// The staff page stays current without a reload: changes made through the API (another till,
// the CLI) appear through the event stream, the counts follow, and a dropped connection resumes
// from the last event id, so a change made while it was down still arrives.

const staffPageTest = staffPageTests()

const counts = (page: Page) => page.evaluate(() => ['available', 'pending', 'sold'].map((s) => document.getElementById(`count-${s}`)?.textContent).join(' '))

staffPageTest('changes made through the API appear without a reload, the counts follow, the feed survives a dropped connection, and a 410 reloads the list', async (staff) => {
  const { page } = staff
  const aloe = await staff.add({ name: 'Aloe' })
  const streams: Array<{ url: string, lastEventId: string | undefined }> = []
  page.on('request', (request) => {
    if (new URL(request.url()).pathname !== '/v3/plant/events') return
    // allHeaders: Last-Event-ID is added by the network stack, after the page's own headers.
    void request.allHeaders().then((headers) => streams.push({ url: request.url(), lastEventId: headers['last-event-id'] }))
  })
  const firstList = page.waitForResponse((r) => new URL(r.url()).pathname === '/v3/plant')
  await page.goto(staff.url + '/')
  await plantButton(page, 'Aloe').waitFor()
  // The stream starts where the first page of the list left off: nothing between the two is missed.
  const position = (await firstList).headers()['feed-position']
  assert.match(position, /^\d+$/)
  await page.getByText('Live', { exact: true }).waitFor()
  while (streams.length === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(new URL(streams[0].url).searchParams.get('after'), position)
  // The counts come from a request of their own, which may land after the list and the stream (a
  // loaded CI machine read '– – –' here once): what they say is checked once they have come.
  await page.waitForFunction(() => ['available', 'pending', 'sold'].every((s) => /^\d+$/.test(document.getElementById(`count-${s}`)?.textContent ?? '')))
  assert.equal(await counts(page), '1 0 0')

  // Another till adds a plant and sells one: both show here, and the counts follow.
  await staff.add({ name: 'Fern', status: 'pending' })
  await plantButton(page, 'Fern').waitFor()
  assert.equal((await staff.call('PUT', '/v3/plant', { id: aloe.id, name: 'Aloe', status: 'sold' })).status, 200)
  await page.locator(`#plants li[data-id="${aloe.id}"]`).getByText('Sold', { exact: true }).waitFor()
  await page.waitForFunction(() => document.getElementById('count-sold')?.textContent === '1')
  assert.equal(await counts(page), '0 1 1')

  // The connection drops; a change made before the browser reconnects still arrives, by Last-Event-ID.
  const before = streams.length
  staff.app.server.closeAllConnections()
  await staff.add({ name: 'Ivy' })
  await plantButton(page, 'Ivy').waitFor()
  await page.getByText('Live', { exact: true }).waitFor()
  const again = streams.slice(before)
  assert.ok(again.length >= 1, 'the page opened the stream again')
  assert.ok(again.some((s) => s.lastEventId !== undefined && Number(s.lastEventId) > 0), `resumed from the last event id: ${JSON.stringify(again)}`)
  await page.waitForFunction(() => document.getElementById('count-available')?.textContent === '1')

  // A delete elsewhere removes the plant, still without a reload.
  assert.equal((await staff.call('DELETE', `/v3/plant/${aloe.id}`)).status, 204)
  await plantButton(page, 'Aloe').waitFor({ state: 'detached' })
  assert.equal(staff.requests.filter((r) => r === `GET ${staff.url}/`).length, 1, 'never reloaded')
  assert.deepEqual(await staff.refusedStatuses(), [])

  // The feed no longer reaches back to the page's position (410): the list is read again and
  // followed from its new position, still without reloading the page.
  const gone = { status: 410, contentType: 'application/json', body: JSON.stringify({ type: '/v3/problems/gone', title: 'Gone', status: 410, requestId: 'test' }) }
  await page.route('**/v3/plant/events*', (route) => route.fulfill(gone), { times: 1 })
  await page.route('**/v3/plant/changes*', (route) => route.fulfill(gone), { times: 1 })
  staff.app.server.closeAllConnections()
  await page.getByText('The list was reloaded to catch up with changes made elsewhere.').waitFor()
  await staff.add({ name: 'Moss' })
  await plantButton(page, 'Moss').waitFor()
  assert.deepEqual(await staff.refusedStatuses(), [410, 410])
  assert.equal(staff.requests.filter((r) => r === `GET ${staff.url}/`).length, 1, 'never reloaded')
  // Chromium logs the streams cut short by the drops; nothing else may reach the console.
  assert.deepEqual(unexpectedErrors(staff.errors).filter((e) => !e.includes('net::ERR_INCOMPLETE_CHUNKED_ENCODING')), [])
})

staffPageTest('the page follows the connection: a failed load offers Retry, and when the service comes back the list and counts reload by themselves', async (staff) => {
  const { page } = staff
  const aloe = await staff.add({ name: 'Aloe' })
  await staff.add({ name: 'Olea europaea' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Aloe').waitFor()
  await page.getByText('Live', { exact: true }).waitFor()
  const search = page.getByRole('searchbox', { name: 'Search by name' })
  const failed = page.getByRole('alert').filter({ hasText: 'The plants could not be loaded.' })
  const retry = page.getByRole('button', { name: 'Retry' })

  // One load refused by a busy service: said, with Retry; nothing from the search before stays beside it.
  await page.route((u) => u.pathname === '/v3/plant', (route) => route.fulfill({
    status: 503, contentType: 'application/json', body: JSON.stringify({ type: '/v3/problems/storage-unavailable', title: 'Storage unavailable', status: 503 })
  }), { times: 1 })
  await search.fill('olea')
  await failed.waitFor()
  assert.deepEqual(await page.locator('#plants [data-role="open"]').allInnerTexts(), [])
  assert.ok(await page.locator('#empty').isHidden(), 'no "no match" under the error')
  await retry.click()
  await plantButton(page, 'Olea europaea').waitFor()
  assert.ok(await failed.isHidden())
  assert.ok(await retry.isHidden())
  // The button went with the error; the focus did not fall to the page (a keyboard user starts again at the list).
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'plants-title')

  // The service goes away: the stream drops and every request fails at the network.
  await page.route('**/v3/**', (route) => route.abort('connectionrefused'))
  staff.app.server.closeAllConnections()
  await page.locator('#live:not([data-state="live"])').waitFor()
  await search.fill('aloe')
  await page.getByRole('alert').filter({ hasText: 'The catalogue cannot be reached.' }).waitFor()
  assert.deepEqual(await page.locator('#plants [data-role="open"]').allInnerTexts(), [], 'no list that is not the search\'s')
  // Meanwhile another till sells the plant.
  assert.equal((await staff.call('PATCH', `/v3/plant/${aloe.id}`, { status: 'sold' })).status, 200)

  // It comes back: without a click, the search's list and the counts are read again and the error goes.
  await page.unroute('**/v3/**')
  await page.getByText('Live', { exact: true }).waitFor()
  await page.locator(`#plants li[data-id="${aloe.id}"]`).getByText('Sold', { exact: true }).waitFor()
  assert.deepEqual(await page.locator('#plants [data-role="open"]').allInnerTexts(), ['Aloe'])
  await page.getByRole('alert').filter({ hasText: 'cannot be reached' }).waitFor({ state: 'hidden' })
  await page.waitForFunction(() => document.getElementById('count-sold')?.textContent === '1')
  assert.deepEqual(unexpectedErrors(staff.errors).filter((e) => !/net::ERR_(CONNECTION_REFUSED|INCOMPLETE_CHUNKED_ENCODING)/.test(e)), [])
})

staffPageTest('an open plant shows at once that someone else changed it, each field they changed marked in words', async (staff, { engine }) => {
  const { page } = staff
  const aloe = await staff.add({ name: 'Aloe', category: 'indoor', price: '12.5' })
  await page.goto(staff.url + '/')
  await page.getByText('Live', { exact: true }).waitFor()
  await plantButton(page, 'Aloe').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.waitFor()
  const mark = (field: string) => editor.locator(`#f-${field}-changed`)

  // Nothing typed: the form takes their version, says so, and marks the fields they changed.
  assert.equal((await staff.call('PATCH', `/v3/plant/${aloe.id}`, { category: 'succulents', price: '9.5' })).status, 200)
  await editor.getByRole('status').filter({ hasText: 'Someone else just changed this plant: Category and Price (marked below). The form shows their version.' }).waitFor()
  for (const field of ['category', 'price']) {
    assert.equal(await mark(field).innerText(), 'Just changed by someone else')
    assert.match((await editor.locator(`#f-${field}`).getAttribute('aria-describedby'))!, new RegExp(`\\bf-${field}-changed$`))
  }
  assert.equal(await mark('name').count(), 0, 'a field they did not change is not marked')
  assert.equal(await editor.getByRole('textbox', { name: 'Category', exact: true }).inputValue(), 'succulents')
  await bothWidths(page, 'editor with fields changed elsewhere', `browser-page-${engine.name}-changed-elsewhere`)

  // Typing under way: it stays, and the field they changed is marked (their value comes with Save's conflict).
  const name = editor.getByRole('textbox', { name: 'Name', exact: true })
  await name.fill('Aloe (staff pick)')
  assert.equal((await staff.call('PATCH', `/v3/plant/${aloe.id}`, { tags: ['spiky'] })).status, 200)
  await editor.getByRole('status').filter({ hasText: 'Someone else just changed this plant: Tags (marked below). What you typed stays; Save shows their version beside yours.' }).waitFor()
  assert.equal(await mark('tags').innerText(), 'Just changed by someone else')
  assert.equal(await name.inputValue(), 'Aloe (staff pick)')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('an open plant deleted by someone else says only what is true: nothing typed, that it is in the trash; typing under way, that it is kept', async (staff) => {
  const { page } = staff
  const aloe = await staff.add({ name: 'Aloe' })
  const fern = await staff.add({ name: 'Fern' })
  await page.goto(staff.url + '/')
  await page.getByText('Live', { exact: true }).waitFor()
  await plantButton(page, 'Aloe').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.waitFor()

  // Nothing typed: no word of typing kept, and where the plant went.
  assert.equal((await staff.call('DELETE', `/v3/plant/${aloe.id}`)).status, 204)
  const alert = editor.getByRole('alert')
  await alert.filter({ hasText: 'deleted by someone else' }).waitFor()
  assert.equal(await alert.innerText(), 'This plant was just deleted by someone else. It is in the trash (Trash, at the top of the page), where it can be restored.')
  assert.deepEqual(await axe(page), [], 'axe-core: the editor of a plant deleted elsewhere')
  await editor.getByRole('button', { name: 'Close' }).click()
  await editor.waitFor({ state: 'hidden' })

  // Typing under way: it is said to be kept.
  await plantButton(page, 'Fern').click()
  await editor.waitFor()
  await editor.getByRole('textbox', { name: 'Name', exact: true }).fill('Fern (staff pick)')
  assert.equal((await staff.call('DELETE', `/v3/plant/${fern.id}`)).status, 204)
  await alert.filter({ hasText: 'What you typed is still here; close the dialog to go back to the list.' }).waitFor()
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('an alert that the catalogue could not be reached goes when the connection comes back (the open plant\'s too), the typing kept', async (staff) => {
  const { page } = staff
  await staff.add({ name: 'Aloe' })
  await page.goto(staff.url + '/')
  await page.getByText('Live', { exact: true }).waitFor()
  await plantButton(page, 'Aloe').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  const name = editor.getByRole('textbox', { name: 'Name', exact: true })

  // The service goes away while a save is sent: said in the form.
  await page.route('**/v3/**', (route) => route.abort('connectionrefused'))
  staff.app.server.closeAllConnections()
  await page.locator('#live:not([data-state="live"])').waitFor()
  await name.fill('Aloe vera')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  const stale = editor.getByRole('alert').filter({ hasText: 'The catalogue cannot be reached.' })
  await stale.waitFor()

  // It comes back: the alert goes by itself; what was typed is still there to save.
  await page.unroute('**/v3/**')
  await page.getByText('Live', { exact: true }).waitFor()
  await stale.waitFor({ state: 'hidden' })
  assert.equal(await name.inputValue(), 'Aloe vera')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Saved “Aloe vera”.' }).waitFor()
  assert.deepEqual(unexpectedErrors(staff.errors).filter((e) => !/net::ERR_(CONNECTION_REFUSED|INCOMPLETE_CHUNKED_ENCODING)/.test(e)), [])
})
