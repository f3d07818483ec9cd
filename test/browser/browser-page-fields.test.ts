import assert from 'node:assert/strict'
import { join } from 'node:path'
import { axe, fitsWidth, giveKey, OUTPUT, plantButton, staffPageTests, unexpectedErrors } from '../helpers/staff-page.js'

// The store's fields on the staff page (price in the catalogue's currency as the browser's
// language writes it, SKU, barcode, description) in the list and the editor; and the page on a
// phone: the filters fold away, the header stays, nothing is cut off.

const staffPageTest = staffPageTests()

staffPageTest('price, SKU, barcode and description show in the list and are edited in the editor, refusals beside their fields', async (staff, { engine }) => {
  const { page } = staff
  const echeveria = await staff.add({ name: 'Echeveria elegans', price: '12.5', sku: 'ECH-001', barcode: '4006381333931', description: 'A blue-grey rosette for a sunny sill.' })
  await staff.add({ name: 'Monstera deliciosa', sku: 'MON-7' })
  await page.goto(staff.url + '/')
  const row = page.locator(`#plants li[data-id="${echeveria.id}"]`)
  await row.waitFor()
  const money = await page.evaluate(() => new Intl.NumberFormat(navigator.language, { style: 'currency', currency: 'EUR' }).format(12.5))
  await row.getByText(money, { exact: true }).waitFor()
  for (const text of ['SKU ECH-001', 'Barcode 4006381333931', 'A blue-grey rosette for a sunny sill.']) await row.getByText(text, { exact: true }).waitFor()

  await plantButton(page, 'Echeveria elegans').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  const price = editor.getByRole('textbox', { name: 'Price (EUR)' })
  assert.equal(await price.inputValue(), '12.50')
  assert.equal(await editor.getByRole('textbox', { name: 'SKU' }).inputValue(), 'ECH-001')
  assert.equal(await editor.getByRole('textbox', { name: 'Description' }).inputValue(), 'A blue-grey rosette for a sunny sill.')
  assert.deepEqual(await axe(page), [], 'axe-core: the editor with the store fields')
  await page.screenshot({ path: join(OUTPUT, `browser-page-${engine.name}-fields-1280.png`) })

  // A wrong check digit and a SKU another plant has: each said beside its field, nothing saved.
  await editor.getByRole('textbox', { name: 'Barcode' }).fill('4006381333932')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await editor.locator('#f-barcode-error').filter({ hasText: /check digit/ }).waitFor()
  assert.equal(await editor.getByRole('textbox', { name: 'Barcode' }).getAttribute('aria-invalid'), 'true')
  // The catalogue's rules are written for programs ("a decimal string", "a GTIN"): staff read their own words.
  await price.fill('12.5 EUR')
  await editor.getByRole('textbox', { name: 'Barcode' }).fill('12345')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await editor.locator('#f-price-error').filter({ hasText: 'Enter the price as an amount such as 12.50' }).waitFor()
  await editor.locator('#f-barcode-error').filter({ hasText: 'Enter the 8, 12, 13 or 14 digits printed under the bars.' }).waitFor()
  const said = await editor.locator('.field-error').allTextContents()
  assert.deepEqual(said.filter((text) => /decimal string|GTIN|GS1|exponent/.test(text)), [], 'no API terms beside the fields')
  await price.fill('12.50')
  await editor.getByRole('textbox', { name: 'Barcode' }).fill('4006381333932')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await editor.locator('#f-barcode-error').filter({ hasText: 'The last digit (the check digit) does not fit the digits before it' }).waitFor()
  await editor.getByRole('textbox', { name: 'Barcode' }).fill('4006381333931')
  await editor.getByRole('textbox', { name: 'SKU' }).fill('mon-7')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  // The plant holding the SKU is named, not only numbered, with a link to look at it.
  const skuError = editor.locator('#f-sku-error')
  await skuError.filter({ hasText: 'Another plant, “Monstera deliciosa” (number ' }).waitFor()
  assert.match(await skuError.innerText(), /^Another plant, “Monstera deliciosa” \(number \d+\), already has this SKU\. Each plant needs its own\./)
  const holderLink = skuError.getByRole('link', { name: 'Open that plant in a new tab' })
  const monstera = (await staff.call('GET', '/v3/plant?sku=MON-7')).body.items[0]
  assert.equal(await holderLink.getAttribute('href'), `/?plant=${monstera.id}`)
  assert.deepEqual(await axe(page), [], 'axe-core: the editor with the SKU refusal')

  // A price typed with a decimal comma, a description removed: saved as the API writes them.
  await editor.getByRole('textbox', { name: 'SKU' }).fill('ECH-002')
  await price.fill('7,5')
  await editor.getByRole('textbox', { name: 'Description' }).fill('')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Saved “Echeveria elegans”.' }).waitFor()
  const saved = (await staff.call('GET', `/v3/plant/${echeveria.id}`)).body
  assert.deepEqual([saved.price, saved.sku, saved.barcode, saved.description], ['7.50', 'ECH-002', '4006381333931', null])
  await row.getByText(await page.evaluate(() => new Intl.NumberFormat(navigator.language, { style: 'currency', currency: 'EUR' }).format(7.5)), { exact: true }).waitFor()
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  for (const status of await staff.refusedStatuses()) assert.ok([400, 409].includes(status), `unexpected ${status}`)
})

staffPageTest('on a phone the filters fold behind a button, the header stays in view, plants fill the screen and nothing is cut off', async (staff, { t, engine, browser }) => {
  for (let i = 1; i <= 12; i++) await staff.add({ name: `Calathea ${i}`, category: 'indoor', tags: ['shade'], price: `${10 + i}` })
  const phone = await browser.newContext({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true })
  t.after(() => phone.close())
  const page = await phone.newPage()
  await page.goto(staff.url + '/')
  await plantButton(page, 'Calathea 1').waitFor()
  const status = page.getByRole('combobox', { name: 'Status', exact: true })
  const toggle = page.getByRole('button', { name: 'Filters' })
  assert.ok(await status.isHidden(), 'the filters are folded')
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false')
  // At least three plants show whole on the first screen.
  const whole = await page.locator('#plants > li').evaluateAll((rows) => rows.filter((r) => r.getBoundingClientRect().bottom <= window.innerHeight).length)
  assert.ok(whole >= 3, `${whole} plants show whole on the first screen`)
  assert.ok(await fitsWidth(page))
  assert.deepEqual(await axe(page), [], 'axe-core at 375 px, folded')
  await page.screenshot({ path: join(OUTPUT, `browser-page-${engine.name}-phone-375.png`) })

  await toggle.tap()
  await status.waitFor()
  await status.selectOption({ label: 'For sale' })
  await page.locator('#filters-toggle').filter({ hasText: 'Filters (1)' }).waitFor()
  // The chosen status shows whole in its box.
  const cut = await status.evaluate((select: HTMLSelectElement) => {
    const probe = document.createElement('span')
    probe.textContent = select.selectedOptions[0].text
    probe.style.font = getComputedStyle(select).font
    probe.style.position = 'absolute'
    document.body.append(probe)
    const needed = probe.getBoundingClientRect().width
    probe.remove()
    return needed > select.clientWidth - 24 ? `${needed}px of text in ${select.clientWidth}px` : ''
  })
  assert.equal(cut, '')
  assert.ok(await fitsWidth(page))
  assert.deepEqual(await axe(page), [], 'axe-core at 375 px, unfolded')
  await page.screenshot({ path: join(OUTPUT, `browser-page-${engine.name}-phone-filters-375.png`) })

  // Scrolled down the list, the header (and its Add plant) is still at the top.
  await page.mouse.wheel(0, 1200)
  await page.waitForFunction(() => window.scrollY > 300)
  const header = await page.locator('header').boundingBox()
  assert.ok(header !== null && Math.abs(header.y) < 1, `the header is at ${header?.y}`)
  assert.ok(await page.getByRole('button', { name: 'Add plant' }).isVisible())
  await page.screenshot({ path: join(OUTPUT, `browser-page-${engine.name}-phone-scrolled-375.png`) })
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})
