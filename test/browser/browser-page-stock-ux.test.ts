import assert from 'node:assert/strict'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { axe, giveKey, OUTPUT, openEditor, plantButton, staffPageTests, unexpectedErrors } from '../helpers/staff-page.js'

// The staff page's stock, as a fresh-eyes reviewer used it (issue 49): at 375 px the sale's message
// leaves the views in sight and the search box shows its whole placeholder; a till's key is told why
// it cannot receive or count; a count of 6 digits shows. (A refusal going when a field's error shows
// is in browser-page-stock.)

const staffPageTest = staffPageTests()

const move = async (staff: { call: (m: string, p: string, b?: unknown) => Promise<{ status: number }> }, id: number, body: Record<string, unknown>): Promise<void> => {
  assert.equal((await staff.call('POST', `/v3/plant/${id}/stock/movements`, body)).status, 201)
}

/** Whether `id`'s box shows `text` whole (the text typed in, no event sent: what was there comes back). */
const showsWhole = (page: Page, id: string, text?: string): Promise<boolean> => page.evaluate(([id, text]) => {
  const box = document.getElementById(id!) as HTMLInputElement
  const was = box.value
  box.value = text ?? box.placeholder
  const whole = box.scrollWidth <= box.clientWidth
  box.value = was
  return whole
}, [id, text])

staffPageTest('at 375 px the sale\'s message goes in the header\'s flow: it covers no row and no count card, and the views stay in sight', async (staff) => {
  const { page } = staff
  for (const name of ['Agave', 'Begonia', 'Cactus', 'Dracaena', 'Echeveria', 'Ficus']) {
    const plant = await staff.add({ name, category: 'indoor' })
    await move(staff, plant.id, { delta: 3, reason: 'received' })
  }
  await page.setViewportSize({ width: 375, height: 812 })
  await page.goto(staff.url + '/?category=indoor')
  await plantButton(page, 'Ficus').waitFor()
  await page.getByRole('button', { name: 'Filters (1)' }).waitFor()
  assert.ok(await showsWhole(page, 'q'), 'the placeholder "Name, SKU or barcode" shows whole beside Filters (1)')
  // At the top of the page (the counts in view), then scrolled to a row at the foot of the window.
  for (const name of ['Agave', 'Ficus']) {
    if (name === 'Ficus') await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight))
    await page.getByRole('button', { name: `Sell one: ${name}` }).click()
    if (name === 'Agave') await giveKey(page)
    await page.getByRole('status').filter({ hasText: `Sold one “${name}”.` }).waitFor()
    const covered = await page.evaluate(() => {
      const toast = document.getElementById('toast')!.getBoundingClientRect()
      const header = document.querySelector('header')!
      const views = document.getElementById('views')!.getBoundingClientRect()
      const hidden = [...document.querySelectorAll('#plants > li, #counts .count')].map((e) => [e.textContent, e.getBoundingClientRect()] as const)
        // Under the header that stays is no place the message chose: the page scrolled there.
        .filter(([, r]) => r.bottom > header.getBoundingClientRect().bottom && r.top < toast.bottom && r.bottom > toast.top)
        .map(([text]) => text)
      return { hidden, inHeader: header.contains(document.getElementById('toast')), viewsAbove: views.bottom <= toast.top, seen: toast.top >= 0 && toast.bottom <= window.innerHeight }
    })
    assert.deepEqual(covered, { hidden: [], inHeader: true, viewsAbove: true, seen: true }, `after selling ${name}`)
    assert.deepEqual(await axe(page), [], `axe-core: the message after selling ${name} at 375 px`)
    await page.screenshot({ path: join(OUTPUT, `browser-page-stock-ux-${name}-message-375.png`) })
  }
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a till\'s key (scope sell) finds Receive, Save count, the fields but Status and Delete off from the start, told why, with no request refused; one that changes plants finds them on', async (staff) => {
  const { page } = staff
  const till = (await staff.call('POST', '/v3/keys', { name: 'till-9', scope: 'sell' })).body.secret as string
  const fern = await staff.add({ name: 'Fern' })
  await move(staff, fern.id, { delta: 3, reason: 'received' })
  const editor = await openEditor(staff, 'Fern', /^3 on hand, 3 available/, till)
  await editor.getByText('This tab’s key may sell, not receive or count: give a key that changes plants (Settings, Forget key), or ask your manager.').waitFor()
  await editor.getByText('This tab’s key may sell: it changes the status alone. To change more, give a key that changes plants (Settings, Forget key), or ask your manager.').waitFor()
  for (const name of ['Receive', 'Save count', 'Delete…']) assert.ok(await editor.getByRole('button', { name }).isDisabled(), `${name} is off`)
  for (const name of ['Units counted', 'Name', 'Low stock at']) assert.ok(await editor.getByRole('textbox', { name }).isDisabled(), `${name} is off`)
  assert.ok(await editor.getByRole('combobox', { name: 'Status' }).isEnabled(), 'a till may change the status')
  // A sale is still the till's to make.
  await editor.getByRole('button', { name: 'Sell one at main' }).click()
  await editor.getByRole('status').filter({ hasText: 'Sold one “Fern” at main.' }).waitFor()
  assert.deepEqual(await staff.refusedStatuses(), [], 'nothing was tried and refused')
  // The key forgotten and a staff key given: everything is on again, the reasons gone.
  await editor.getByRole('button', { name: 'Close' }).click()
  await editor.waitFor({ state: 'hidden' })
  await page.getByRole('button', { name: 'Forget key' }).click()
  await plantButton(page, 'Fern').click()
  await giveKey(page)
  await editor.getByText(/^2 on hand, 2 available/).waitFor()
  await page.waitForFunction(() => (document.getElementById('s-receive') as HTMLButtonElement).disabled === false)
  for (const name of ['Receive', 'Save count', 'Delete…']) assert.ok(await editor.getByRole('button', { name }).isEnabled(), `${name} is on`)
  assert.ok(await editor.getByRole('textbox', { name: 'Low stock at' }).isEnabled())
  assert.equal(await editor.getByText('This tab’s key may sell', { exact: false }).count(), 0)
  assert.deepEqual(await staff.refusedStatuses(), [])
})

staffPageTest('the Stock part\'s boxes show a count of 6 digits, at 1280 and 375 px', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  await move(staff, fern.id, { delta: 3, reason: 'received' })
  await openEditor(staff, 'Fern', /^3 on hand, 3 available/)
  for (const [width, height] of [[1280, 900], [375, 812]]) {
    await page.setViewportSize({ width, height })
    for (const id of ['s-counted', 's-received']) assert.ok(await showsWhole(page, id, '123456'), `#${id} shows 123456 whole at ${width} px`)
  }
})

staffPageTest('a Save refused for the key\'s scope (not known beforehand) shows its one refusal in sight of the Save just pressed, at 1280 and 375 px', async (staff) => {
  const { page } = staff
  const till = (await staff.call('POST', '/v3/keys', { name: 'till-8', scope: 'sell' })).body.secret as string
  await staff.add({ name: 'Fern' })
  // The service could not say what the key may do: the page learns it from the refusal, as before.
  await page.route('**/v3/keys/current', (route) => route.abort())
  const editor = await openEditor(staff, 'Fern', undefined, till)
  for (const [width, height] of [[1280, 900], [375, 812]] as const) {
    await page.setViewportSize({ width, height })
    const low = editor.getByRole('textbox', { name: 'Low stock at' })
    await low.fill(String(width))
    // Twice: the second refusal replaces the first, it does not join it.
    for (let i = 0; i < 2; i++) {
      await low.scrollIntoViewIfNeeded()
      await editor.getByRole('button', { name: 'Save', exact: true }).click()
      const alert = editor.getByRole('alert').filter({ hasText: 'Your staff key does not allow this. Ask your manager.' })
      await alert.waitFor()
      await page.waitForFunction(() => {
        const box = document.getElementById('editor-alert')!.getBoundingClientRect()
        const form = document.getElementById('editor-form')!.getBoundingClientRect()
        return box.top >= Math.max(0, form.top) && box.bottom <= Math.min(window.innerHeight, form.bottom)
      }, undefined, { timeout: 5000 })
      const said = await page.evaluate(() => [...document.querySelectorAll('[role="alert"], [role="status"]')]
        .filter((e) => (e as HTMLElement).offsetParent !== null && e.textContent !== '').map((e) => e.textContent))
      assert.deepEqual(said, ['Your staff key does not allow this. Ask your manager.'], `one message at ${width} px, save ${i + 1}`)
    }
    await page.screenshot({ path: join(OUTPUT, `browser-page-stock-ux-refused-save-${width}.png`) })
  }
})

staffPageTest('"No plant matches" names the search and filters applied; Clear filters keeps the search, Clear search keeps the filters', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Boston fern', category: 'fern' })
  await move(staff, fern.id, { delta: 2, reason: 'received' })
  await staff.add({ name: 'Hart\'s tongue fern', category: 'fern' })
  await staff.add({ name: 'Ivy', category: 'climber' })
  await page.goto(staff.url + '/?q=tongue&category=fern&stock=in')
  const empty = page.locator('#empty-text')
  await empty.filter({ hasText: 'No plant matches: search “tongue”, category fern, in stock.' }).waitFor()
  assert.deepEqual(await axe(page), [], 'axe-core: nothing found, both ways back offered')
  await page.getByRole('button', { name: 'Clear filters' }).click()
  await plantButton(page, 'Hart\'s tongue fern').waitFor()
  assert.equal(await page.getByRole('searchbox', { name: 'Search by name' }).inputValue(), 'tongue', 'the search stays')
  assert.equal(await page.getByRole('textbox', { name: 'Category', exact: true }).inputValue(), '')
  assert.equal(await page.getByRole('combobox', { name: 'Stock' }).inputValue(), '')
  await page.getByRole('textbox', { name: 'Category', exact: true }).fill('climber')
  await empty.filter({ hasText: 'No plant matches: search “tongue”, category climber.' }).waitFor()
  assert.ok(await page.getByRole('button', { name: 'Clear filters' }).isVisible())
  await page.getByRole('button', { name: 'Clear search' }).click()
  await plantButton(page, 'Ivy').waitFor()
  assert.equal(await page.getByRole('searchbox', { name: 'Search by name' }).inputValue(), '')
  assert.equal(await page.getByRole('textbox', { name: 'Category', exact: true }).inputValue(), 'climber', 'the filters stay')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})
