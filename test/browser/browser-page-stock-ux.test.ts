import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { giveKey, plantButton, staffPageTests, unexpectedErrors } from '../helpers/staff-page.js'

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

staffPageTest('at 375 px the sale\'s message sits below the header (the views stay in sight), and the search box shows its whole placeholder with a filter on', async (staff) => {
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
  // A row at the foot of the window: its message goes to the top, where it would have hidden the views.
  const rows = await page.locator('#plants > li').evaluateAll((all) => all.map((r) => [r.querySelector('[data-role="open"]')?.textContent ?? '', r.getBoundingClientRect().bottom] as const))
  const name = rows.find(([, bottom]) => bottom > 812 - 120 && bottom <= 812)?.[0]
  assert.ok(name !== undefined, `a row ends at the foot of the window: ${JSON.stringify(rows)}`)
  await page.getByRole('button', { name: `Sell one: ${name}` }).click()
  await giveKey(page)
  await page.getByRole('status').filter({ hasText: `Sold one “${name}”.` }).waitFor()
  const [toastTop, headerBottom, top] = await page.evaluate(() => [document.getElementById('toast')!.getBoundingClientRect().top, document.querySelector('header')!.getBoundingClientRect().bottom, document.getElementById('toast')!.classList.contains('top')] as const)
  assert.ok(top, 'the message went to the top (at the foot it would have covered the row)')
  assert.ok(toastTop >= headerBottom, `the message (top ${toastTop}) is below the header (bottom ${headerBottom})`)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a till\'s key (scope sell) refused a receipt is told why, and Receive and Save count are off until another key is given', async (staff) => {
  const { page } = staff
  const till = (await staff.call('POST', '/v3/keys', { name: 'till-9', scope: 'sell' })).body.secret as string
  const fern = await staff.add({ name: 'Fern' })
  await move(staff, fern.id, { delta: 3, reason: 'received' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Fern').click()
  await giveKey(page, till)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByText(/^3 on hand, 3 available/).waitFor()
  assert.ok(await editor.getByRole('button', { name: 'Receive' }).isEnabled())
  await editor.getByRole('textbox', { name: 'Units received' }).fill('4')
  await editor.getByRole('button', { name: 'Receive' }).click()
  await editor.getByText('This tab’s key may sell, not receive or count: give a key that changes plants (Settings, Forget key), or ask your manager.').waitFor()
  for (const name of ['Receive', 'Save count']) assert.ok(await editor.getByRole('button', { name }).isDisabled(), `${name} is off`)
  assert.ok(await editor.getByRole('textbox', { name: 'Units counted' }).isDisabled())
  // A sale is still the till's to make.
  await editor.getByRole('button', { name: 'Sell one at main' }).click()
  await editor.getByRole('status').filter({ hasText: 'Sold one “Fern” at main.' }).waitFor()
  // The key forgotten and a staff key given: Receive and Save count are on again, the reason gone.
  await editor.getByRole('button', { name: 'Close' }).click()
  await page.getByRole('button', { name: 'Discard changes' }).click()
  await editor.waitFor({ state: 'hidden' })
  await page.getByRole('button', { name: 'Forget key' }).click()
  await plantButton(page, 'Fern').click()
  await giveKey(page)
  await editor.getByText(/^2 on hand, 2 available/).waitFor()
  assert.ok(await editor.getByRole('button', { name: 'Receive' }).isEnabled())
  assert.ok(await editor.getByRole('button', { name: 'Save count' }).isEnabled())
  assert.equal(await editor.getByText('This tab’s key may sell', { exact: false }).count(), 0)
  assert.deepEqual(await staff.refusedStatuses(), [403])
})

staffPageTest('the Stock part\'s boxes show a count of 6 digits, at 1280 and 375 px', async (staff) => {
  const { page } = staff
  const fern = await staff.add({ name: 'Fern' })
  await move(staff, fern.id, { delta: 3, reason: 'received' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Fern').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByText(/^3 on hand, 3 available/).waitFor()
  for (const [width, height] of [[1280, 900], [375, 812]]) {
    await page.setViewportSize({ width, height })
    for (const id of ['s-counted', 's-received']) assert.ok(await showsWhole(page, id, '123456'), `#${id} shows 123456 whole at ${width} px`)
  }
})
