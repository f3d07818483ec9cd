import assert from 'node:assert/strict'
import { axe, giveKey, plantButton, staffPageTests, unexpectedErrors } from '../helpers/staff-page.js'

// What a scan that opens no plant says: the digits the scanner read, whole, and why they opened
// nothing (no plant has them, a misread check digit, too few or too many digits).

const staffPageTest = staffPageTests()

staffPageTest('a scan that opens nothing names exactly the digits read, and says when the check digit does not fit or digits are missing', async (staff) => {
  const { page } = staff
  await staff.add({ name: 'Echeveria elegans', barcode: '4006381333931' })
  await staff.add({ name: 'Monstera deliciosa', sku: 'MON-7' })
  await page.goto(staff.url + '/?q=mon')
  await plantButton(page, 'Monstera deliciosa').waitFor()
  const search = page.getByRole('searchbox', { name: 'Search by name' })
  const empty = page.locator('#empty-text')

  // Scanned after the search the box held: the message names the scanned digits, not the box's text.
  await search.click()
  await page.keyboard.press('End')
  await page.keyboard.type('4006381333932')
  await page.keyboard.press('Enter')
  await empty.filter({ hasText: 'The barcode 4006381333932 was misread: its last digit (the check digit) does not fit the digits before it. Scan it again.' }).waitFor()

  // A code read in part: its digits as read, how many, and how many a barcode has.
  await search.fill('')
  await plantButton(page, 'Monstera deliciosa').waitFor()
  await page.keyboard.type('40063813339')
  await page.keyboard.press('Enter')
  await empty.filter({ hasText: 'The barcode was not read whole: 40063813339 has 11 digits, and a barcode has 8, 12, 13 or 14. Scan it again.' }).waitFor()

  // A whole, valid barcode no plant has.
  await search.fill('mon')
  await plantButton(page, 'Monstera deliciosa').waitFor()
  await page.keyboard.type('4006381333948')
  await page.keyboard.press('Enter')
  await empty.filter({ hasText: 'No plant has the barcode 4006381333948. Check that it was scanned whole, or add the plant with it.' }).waitFor()
  assert.ok(await page.getByRole('dialog', { name: 'Edit plant' }).isHidden())
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a scan refused by an open plant\'s form is said as a refusal, not in the colour of a success', async (staff) => {
  const { page } = staff
  const zz = await staff.add({ name: 'ZZ plant' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'ZZ plant').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  const name = editor.getByRole('textbox', { name: 'Name', exact: true })
  // A scanner's keys, all in one task (as fast as a scanner types, whatever the machine's load), then Enter.
  await name.evaluate((input: HTMLInputElement) => {
    for (const key of '4006381000000') {
      input.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true }))
      input.value += key
    }
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }))
  })
  const said = editor.getByRole('alert').filter({ hasText: 'That looked like a barcode scan, so nothing was saved.' })
  await said.waitFor()
  const colours = await said.evaluate((box) => {
    const note = document.querySelector('.note')!
    return { refusal: getComputedStyle(box).backgroundColor, success: getComputedStyle(note).backgroundColor }
  })
  assert.notEqual(colours.refusal, colours.success)
  assert.equal(await name.inputValue(), 'ZZ plant')
  assert.equal((await staff.call('GET', `/v3/plant/${zz.id}`)).body.name, 'ZZ plant')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('after a scan that opens nothing, the next scan replaces the code rather than being added after it', async (staff) => {
  const { page } = staff
  await staff.add({ name: 'Echeveria elegans', barcode: '4006381333931' })
  await staff.add({ name: 'Monstera deliciosa' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Monstera deliciosa').waitFor()
  const search = page.getByRole('searchbox', { name: 'Search by name' })
  const empty = page.locator('#empty-text')
  await search.click()

  await page.keyboard.type('4006381333948')
  await page.keyboard.press('Enter')
  await empty.filter({ hasText: 'No plant has the barcode 4006381333948.' }).waitFor()
  // The code stays to be read, selected: the next keys replace it.
  await page.waitForFunction(() => {
    const box = document.querySelector<HTMLInputElement>('#q')!
    return box.selectionStart === 0 && box.selectionEnd === box.value.length
  })
  await page.keyboard.type('4006381333955')
  assert.equal(await search.inputValue(), '4006381333955')
  await page.keyboard.press('Enter')
  await empty.filter({ hasText: 'No plant has the barcode 4006381333955.' }).waitFor()

  // A search before the scan stays: only the code is replaced, and a plant found gives the search back.
  await search.fill('mon')
  await plantButton(page, 'Monstera deliciosa').waitFor()
  await page.keyboard.type('4006381333948')
  await page.keyboard.press('Enter')
  await empty.filter({ hasText: 'No plant has the barcode 4006381333948.' }).waitFor()
  await page.waitForFunction(() => document.querySelector<HTMLInputElement>('#q')!.selectionStart === 3)
  await page.keyboard.type('4006381333931')
  await page.keyboard.press('Enter')
  await giveKey(page)
  await page.getByRole('dialog', { name: 'Edit plant' }).waitFor()
  assert.equal(await search.inputValue(), 'mon')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a SKU or barcode typed without Enter is not said to match nothing: the list says Enter looks it up', async (staff) => {
  const { page } = staff
  await staff.add({ name: 'Monstera deliciosa', sku: 'MON-7' })
  await page.goto(staff.url + '/')
  await plantButton(page, 'Monstera deliciosa').waitFor()
  const search = page.getByRole('searchbox', { name: 'Search by name or code', exact: true })
  const empty = page.locator('#empty-text')
  await search.click()

  await page.keyboard.type('MON-8')
  await empty.filter({ hasText: 'No plant’s name matches. Press Enter to look up this SKU or barcode.' }).waitFor()
  assert.deepEqual(await axe(page), [], 'axe-core: the list saying Enter looks up a code')
  await page.keyboard.press('Enter')
  await empty.filter({ hasText: 'No plant has the SKU or barcode “MON-8”, and no plant’s name matches it.' }).waitFor()

  // Words are a name search as before.
  await search.fill('cactus')
  await empty.filter({ hasText: 'No plant matches: search “cactus”.' }).waitFor()

  await search.fill('MON-7')
  await empty.filter({ hasText: 'Press Enter to look up this SKU or barcode.' }).waitFor()
  await page.keyboard.press('Enter')
  await giveKey(page)
  await page.getByRole('dialog', { name: 'Edit plant' }).waitFor()
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})
