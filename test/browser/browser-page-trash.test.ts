import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { bothWidths, giveKey, KEY, plantButton, png, staffPageTests, unexpectedErrors } from '../helpers/staff-page.js'

// The staff page's other views: the trash (a delete undone from its message, deleted plants listed
// with when and by whom, restored in place, removed for good with a manager's key) and the
// settings (the tab's key, the catalogue's currency); each in the address, at 1280 and 375 px.

const staffPageTest = staffPageTests()

const params = (page: Page) => Object.fromEntries(new URL(page.url()).searchParams)

staffPageTest('a delete is undone from its message; the trash lists deleted plants (when, by whom), restores one in place and removes one for good with a manager\'s key', async (staff, { engine }) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern', category: 'indoor' })
  await staff.addPhoto(fern.id, png(320, 240))
  const ivy = await staff.add({ name: 'Ivy', category: 'climbers' })
  const moss = await staff.add({ name: 'Moss' })
  await page.goto(staff.url + '/')

  // Deleted from the editor: the question says it goes to the trash; Undo brings it back, photo and all.
  await plantButton(page, 'Fern').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByRole('button', { name: 'Delete…' }).click()
  const confirm = page.getByRole('alertdialog', { name: 'Delete this plant?' })
  await confirm.getByText('“Fern” and its photos will move to the trash, where they can be restored.').waitFor()
  await confirm.getByRole('button', { name: 'Delete' }).click()
  await page.getByRole('status').filter({ hasText: 'Deleted “Fern”.' }).waitFor()
  assert.equal((await staff.call('GET', `/v3/plant/${fern.id}`)).status, 404)
  await page.locator(`#plants li.gone[data-id="${fern.id}"]`).waitFor()
  await page.getByRole('button', { name: 'Undo', exact: true }).click()
  await page.waitForFunction(() => /Undone|Not undone/.test(document.getElementById('message')?.textContent ?? ''))
  assert.equal(await page.locator('#message').textContent(), 'Undone: “Fern” is back.')
  const back = (await staff.call('GET', `/v3/plant/${fern.id}`)).body
  assert.deepEqual([back.name, back.category, back.photos.length], ['Fern', 'indoor', 1])
  await plantButton(page, 'Fern').waitFor()

  // Ivy is deleted by another till (its key is one set up where the catalogue runs: env-1 to the service), Moss from this page.
  assert.equal((await staff.call('DELETE', `/v3/plant/${ivy.id}`)).status, 204)
  await plantButton(page, 'Moss').click()
  // Changed by someone else after it was opened (the stream held off, or the page would show the
  // change first): the delete is refused (If-Match) and said; the plant is shown as it is now.
  const stream = (u: URL): boolean => u.pathname.endsWith('/events')
  await page.route(stream, (route) => route.abort())
  staff.app.server.closeAllConnections()
  await page.locator('#live:not([data-state="live"])').waitFor()
  assert.equal((await staff.call('PATCH', `/v3/plant/${moss.id}`, { category: 'ground cover' })).status, 200)
  await editor.getByRole('button', { name: 'Delete…' }).click()
  await confirm.getByRole('button', { name: 'Delete' }).click()
  await editor.getByRole('alert').filter({ hasText: 'Not deleted: someone changed “Moss” just now.' }).waitFor()
  assert.equal(await editor.getByRole('textbox', { name: 'Category' }).inputValue(), 'ground cover')
  assert.equal((await staff.call('GET', `/v3/plant/${moss.id}`)).status, 200)
  await page.unroute(stream)
  // The stream back (its reconnect reloads what is shown): from here on no reload crosses a step.
  await page.locator('#live[data-state="live"]').waitFor()
  await editor.getByRole('button', { name: 'Delete…' }).click()
  await confirm.getByRole('button', { name: 'Delete' }).click()
  await page.getByRole('status').filter({ hasText: 'Deleted “Moss”.' }).waitFor()

  // The trash, from the header: its own address, newest first, with when and by whom.
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Trash' }).click()
  const trash = page.locator('#trash-list')
  await trash.getByText('Moss', { exact: true }).waitFor()
  assert.deepEqual(params(page), { view: 'trash' })
  assert.equal(await page.title(), 'Trash · Plant catalogue')
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'trash-title')
  assert.ok(await page.locator('#plants').isHidden(), 'the plants are not shown beside the trash')
  assert.deepEqual(await trash.locator('.plant-title').allInnerTexts(), ['Moss', 'Ivy'])
  assert.match(await trash.locator(`li[data-id="${ivy.id}"] .plant-meta`).innerText(), /^Deleted .+ with a key set up where the catalogue runs; it was available/)
  // How long plants wait (the service's 30 days), and on each row the day its purgeAt names, in the page's language.
  await page.locator('#trash-wait').filter({ hasText: 'Deleted plants wait 30 days here, then go for good' }).waitFor()
  const listed = (await staff.call('GET', '/v3/trash')).body.items as Array<{ id: number, purgeAt: string }>
  for (const entry of listed) {
    const goes = await page.evaluate((at) => {
      const date = new Date(at)
      const year = date.getFullYear() === new Date().getFullYear() ? {} : { year: 'numeric' } as const
      return new Intl.DateTimeFormat(navigator.language, { day: 'numeric', month: 'long', ...year }).format(date)
    }, entry.purgeAt)
    assert.equal(await trash.locator(`li[data-id="${entry.id}"] .trash-goes`).innerText(), `goes on ${goes}`)
  }
  await bothWidths(page, 'trash', `browser-page-${engine.name}-trash`)

  // Restore: the row stays where it is and says so; the plant is back, in the list too.
  await page.getByRole('button', { name: 'Restore: Ivy' }).click()
  await page.getByRole('status').filter({ hasText: 'Restored “Ivy”: it is back in the list.' }).waitFor()
  await trash.locator(`li[data-id="${ivy.id}"]`).getByText('Back in the list').waitFor()
  assert.deepEqual(await trash.locator('.plant-title').allInnerTexts(), ['Moss', 'Ivy'])
  assert.equal((await staff.call('GET', `/v3/plant/${ivy.id}`)).body.category, 'climbers')

  // Removing for good asks first, and needs a manager's key: a counter key (write) is told so plainly.
  const counter = await staff.call('POST', '/v3/keys', { name: 'counter', scope: 'write' })
  assert.equal(counter.status, 201)
  await page.evaluate((key) => sessionStorage.setItem('plants.apiKey', key), counter.body.secret)
  await page.getByRole('button', { name: 'Remove for good: Moss' }).click()
  const sure = page.getByRole('alertdialog', { name: 'Remove for good?' })
  await sure.getByText('“Moss” and its photos will be removed for good. This cannot be undone.').waitFor()
  await sure.getByRole('button', { name: 'Remove for good' }).click()
  await page.getByRole('status').filter({ hasText: '“Moss” was not removed: only a manager’s key can remove plants for good.' }).waitFor()
  assert.equal((await staff.call('GET', '/v3/trash')).body.items.length, 1)
  await page.evaluate((key) => sessionStorage.setItem('plants.apiKey', key), KEY)
  await page.getByRole('button', { name: 'Remove for good: Moss' }).click()
  await sure.getByRole('button', { name: 'Remove for good' }).click()
  await page.getByRole('status').filter({ hasText: 'Removed “Moss” for good.' }).waitFor()
  assert.deepEqual((await staff.call('GET', '/v3/trash')).body.items, [])
  assert.equal(await trash.locator(`li[data-id="${moss.id}"] .status`).innerText(), 'Removed')

  // A reload shows the trash as it is now; Back returns to the plants, Ivy among them.
  await page.reload()
  await page.getByText('The trash is empty.').waitFor()
  await page.goBack()
  await plantButton(page, 'Ivy').waitFor()
  assert.deepEqual(params(page), {})
  assert.equal(await page.title(), 'Plant catalogue')
  // Chromium logs the stream cut short by the held-off connection; nothing else may reach the console.
  assert.deepEqual(unexpectedErrors(staff.errors).filter((e) => !/net::ERR_/.test(e)), [])
  assert.deepEqual(await staff.refusedStatuses(), [412, 403])
})

staffPageTest('the settings say whether the tab holds a key, change and forget it, and name the catalogue\'s currency; the address stays theirs while the list follows the feed', async (staff, { engine }) => {
  const { page } = staff
  await staff.add({ name: 'Aloe' })
  await page.goto(staff.url + '/?view=settings')
  const settings = page.getByRole('region', { name: 'Settings' })
  await settings.getByText('No staff key is kept in this tab. You are asked for one before your first change.').waitFor()
  const currency = await page.evaluate(() => `${new Intl.DisplayNames([navigator.language], { type: 'currency' }).of('EUR')} (EUR)`)
  await settings.locator('#currency-name').filter({ hasText: currency }).waitFor()
  const example = await page.evaluate(() => new Intl.NumberFormat(navigator.language, { style: 'currency', currency: 'EUR' }).format(1234.5))
  assert.equal(await settings.locator('#currency-example').innerText(), example)
  assert.ok(await page.locator('#plants').isHidden())

  // Give the key here rather than at the first change; forget it before leaving the till.
  await settings.getByRole('button', { name: 'Give key' }).click()
  await giveKey(page)
  await settings.getByText('A staff key is kept in this browser tab. It is forgotten when the tab closes.').waitFor()
  await settings.getByText('The new key is kept for this tab.', { exact: false }).waitFor()
  assert.equal(await page.evaluate(() => sessionStorage.getItem('plants.apiKey')), KEY)
  await bothWidths(page, 'settings', `browser-page-${engine.name}-settings`)
  // "Not now" on Change key keeps the key the tab had.
  await settings.getByRole('button', { name: 'Change key' }).click()
  await page.getByRole('dialog', { name: 'Your staff key' }).getByRole('button', { name: 'Not now' }).click()
  assert.equal(await page.evaluate(() => sessionStorage.getItem('plants.apiKey')), KEY)
  await settings.getByRole('button', { name: 'Forget key' }).click()
  await settings.getByText('The key is forgotten. You will be asked for one before your next change.').waitFor()
  assert.equal(await page.evaluate(() => sessionStorage.getItem('plants.apiKey')), null)
  assert.ok(await page.getByRole('banner').getByRole('button', { name: 'Forget key' }).isHidden())

  // Another till adds a plant: the list behind follows the feed, and the address still names the settings.
  await staff.add({ name: 'Basil' })
  await page.locator('#plants [data-role="open"]', { hasText: 'Basil' }).waitFor({ state: 'attached' })
  assert.deepEqual(params(page), { view: 'settings' })
  // The plants, from the header: the list as it is now.
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Plants' }).click()
  await plantButton(page, 'Basil').waitFor()
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'plants-title')
  assert.deepEqual(params(page), {})
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [])
})

staffPageTest('a trash that could not be loaded offers Try again; once it loads, the focus is on the trash\'s heading, not lost to the page', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  assert.equal((await staff.call('DELETE', `/v3/plant/${fern.id}`)).status, 204)
  await page.goto(staff.url + '/')
  await plantButton(page, 'Fern').waitFor({ state: 'detached' })
  await page.route((u) => u.pathname === '/v3/trash', (route) => route.fulfill({
    status: 503, contentType: 'application/json', body: JSON.stringify({ type: '/v3/problems/storage-unavailable', title: 'Storage unavailable', status: 503 })
  }), { times: 1 })
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Trash' }).click()
  await giveKey(page)
  const again = page.getByRole('button', { name: 'Try again' })
  await again.focus()
  await page.keyboard.press('Enter')
  await page.locator('#trash-list').getByText('Fern', { exact: true }).waitFor()
  assert.ok(await again.isHidden())
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'trash-title')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})
