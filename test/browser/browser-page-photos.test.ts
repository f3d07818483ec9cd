import assert from 'node:assert/strict'
import { join } from 'node:path'
import { axe, giveKey, OUTPUT, plantButton, png, staffPageTests, unexpectedErrors, type StaffPage } from '../helpers/staff-page.js'

// A plant's photos on the staff page: enlarged, put in another order by dragging or from the
// keyboard, and a cover chosen (PUT /v3/plant/{id}/photos/order with If-Match).

const staffPageTest = staffPageTests()

/** The plant's photos as the API has them now, by their sizes (each test photo has its own). */
const order = async (staff: StaffPage, id: number): Promise<string[]> =>
  (await staff.call('GET', `/v3/plant/${id}`)).body.photos.map((p: any) => `${p.width}x${p.height}`)

staffPageTest('photos are enlarged, reordered by dragging and by keyboard, and a cover is chosen', async (staff, { engine }) => {
  const { page } = staff
  const fig = await staff.add({ name: 'Fig' })
  for (const [w, h] of [[320, 240], [240, 320], [300, 300]]) await staff.addPhoto(fig.id, png(w, h))
  await page.goto(staff.url + '/')
  await plantButton(page, 'Fig').click()
  await giveKey(page)
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByRole('img', { name: 'Photo 3 of Fig' }).waitFor()

  // Enlarged: the display size, in a dialog of its own; Esc goes back to the editor.
  await editor.getByRole('button', { name: 'Enlarge photo 2' }).click()
  const viewer = page.getByRole('dialog', { name: 'Photo 2 of 3' })
  await viewer.waitFor()
  await page.waitForFunction(() => (document.querySelector('#viewer img') as HTMLImageElement | null)?.naturalWidth === 240)
  assert.deepEqual(await axe(page), [], 'axe-core: the enlarged photo')
  await page.screenshot({ path: join(OUTPUT, `browser-page-${engine.name}-photo-enlarged-1280.png`) })
  await viewer.getByRole('button', { name: 'Next photo' }).click()
  await page.getByRole('dialog', { name: 'Photo 3 of 3' }).waitFor()
  await page.keyboard.press('Escape')
  await viewer.waitFor({ state: 'hidden' })
  assert.ok(await editor.isVisible())

  // The cover chosen: said without a number, since the cards show none.
  await editor.getByRole('button', { name: 'Make cover: photo 3' }).click()
  await editor.getByText('The photo you chose is now the cover: it shows first.').waitFor()
  assert.deepEqual(await order(staff, fig.id), ['300x300', '320x240', '240x320'])
  await editor.getByRole('img', { name: 'Cover photo of Fig' }).waitFor()

  // From the keyboard: the first photo one place later; focus stays on the photo it moved.
  await editor.getByRole('button', { name: 'Move photo 1 later' }).focus()
  await page.keyboard.press('Enter')
  // The cover moved away: the message names the photo that is the cover now.
  await editor.getByText('Photo 1 is now photo 2: the cover is now the photo that was photo 2.').waitFor()
  assert.deepEqual(await order(staff, fig.id), ['320x240', '300x300', '240x320'])
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Move photo 2 later')

  // Dragged: the last photo onto the first place.
  await editor.locator('#photo-list > li').nth(2).dragTo(editor.locator('#photo-list > li').nth(0))
  await editor.getByText('Photo 3 is now photo 1: the cover.').waitFor()
  assert.deepEqual(await order(staff, fig.id), ['240x320', '320x240', '300x300'])

  // Someone else changed the plant meanwhile: the order is refused (412), said, and the photos shown as they are.
  // (The stream is held off first, or the page would take the new version before the click.)
  await page.route((u) => u.pathname.endsWith('/events'), (route) => route.abort())
  staff.app.server.closeAllConnections()
  await page.locator('#live:not([data-state="live"])').waitFor()
  assert.equal((await staff.call('PATCH', `/v3/plant/${fig.id}`, { name: 'Fig tree' })).status, 200)
  await editor.getByRole('button', { name: 'Make cover: photo 2' }).click()
  await editor.getByRole('alert').filter({ hasText: 'The photos were changed by someone else' }).waitFor()
  assert.deepEqual(await order(staff, fig.id), ['240x320', '320x240', '300x300'])
  assert.deepEqual(unexpectedErrors(staff.errors).filter((e) => !/net::ERR_/.test(e)), [])
})
