import assert from 'node:assert/strict'
import type { Locator, Page } from 'playwright-core'
import { Webhook as Verifier } from 'standardwebhooks'
import { bothWidths, giveKey, KEY, OWN_SERVICE, plantButton, staffPageTests, unexpectedErrors, type StaffPage } from '../helpers/staff-page.js'
import { receiver, until } from '../helpers/receiver.js'

// The settings' parts for a manager: the keys (made with what they may do, the
// secret shown once, listed, revoked after a question naming the key) and the connected systems
// (webhooks: added with their secret shown once, a test sent and its answer said, paused and
// resumed, deliveries listed, a failing one marked plainly, removed after a question). Without a
// manager's key both say so and offer to take one; they are fetched only when the settings open.

// Webhooks may reach the loopback receivers; retries come after 10 ms and give up at once, so a
// receiver answering 500 turns its webhook failing at its first change.
const staffPageTest = staffPageTests({ config: { webhookAllowPrivate: true }, app: { webhooks: { retryDelayMs: () => 10, retryForMs: 0 } } })

const ADMIN_MODULE = /\/page\/admin\.js$/
const keysPart = (page: Page) => page.getByRole('region', { name: 'Keys', exact: true })
const systemsPart = (page: Page) => page.getByRole('region', { name: 'Connected systems', exact: true })
const settingsLink = (page: Page) => page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Settings' })
const shownText = (locator: Locator) => locator.evaluate((node) => (node as HTMLElement).innerText)

/** A key's row in the keys part. */
const keyRow = (page: Page, name: string) => keysPart(page).locator(`li[data-name="${name}"]`)

/** The day `iso` (a date) named as the page names a key's last day. */
const dayName = (page: Page, iso: string) => page.evaluate((d) => new Intl.DateTimeFormat(navigator.language, { dateStyle: 'medium', timeZone: 'UTC' }).format(new Date(`${d}T12:00:00Z`)), iso)

/** Answers an API call made with `secret` rather than the tests' admin key. */
const withKey = (staff: StaffPage, secret: string, method: string, path: string, body?: unknown) =>
  staff.call(method, path, body, { authorization: `Bearer ${secret}` })

staffPageTest('a manager makes a key that may only sell (its secret shown once, then usable), sees it listed, and revokes it after a question naming it; the keys of the environment are said not to be revoked here', async (staff, { engine }) => {
  const { page, context } = staff
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: staff.url })
  const plant = await staff.add({ name: 'Aloe' })

  // The first load does not fetch the manager's parts; opening the settings does.
  await page.goto(staff.url + '/')
  await plantButton(page, 'Aloe').waitFor()
  await page.waitForLoadState('networkidle')
  assert.ok(!staff.requests.some((r) => ADMIN_MODULE.test(r)), 'admin.js is not part of the first load')
  await settingsLink(page).click()
  await keysPart(page).getByText('A manager’s key is needed to see and change the keys.').waitFor()
  assert.ok(staff.requests.some((r) => ADMIN_MODULE.test(r)), 'admin.js is fetched when the settings open')
  await keysPart(page).getByText('This tab holds no staff key.', { exact: false }).waitFor()
  await systemsPart(page).getByText('A manager’s key is needed to see and change the connected systems.').waitFor()
  assert.ok(!staff.requests.some((r) => r.includes('/v3/keys') || r.includes('/v3/webhooks')), 'nothing is asked of the service without a key')

  // Given a manager's key here, both parts show what they hold.
  await keysPart(page).getByRole('button', { name: 'Give a manager’s key' }).click()
  await giveKey(page)
  await keysPart(page).getByText('No keys have been made here yet.').waitFor()
  await keysPart(page).getByText('Keys set up where the catalogue runs (named in its settings, or env-1, env-2, …) are not listed here and cannot be revoked here: whoever runs the catalogue removes them from its settings and restarts it.').waitFor()
  await systemsPart(page).getByText('No other system is told of changes yet.').waitFor()

  // A new key: the form's own checks first, said at the field.
  await keysPart(page).getByRole('button', { name: 'New key' }).click()
  const form = page.getByRole('form', { name: 'New key' })
  await form.getByRole('textbox', { name: 'Name' }).fill('Till 3')
  await form.getByRole('button', { name: 'Make key' }).click()
  await form.getByText('Use lower-case letters, digits, dots, dashes and underscores only (no spaces)', { exact: false }).waitFor()
  await form.getByText('Choose what the key may do.').waitFor()
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-invalid')), 'true', 'focus goes to the first field to fix')
  await bothWidths(page, 'key-form', `browser-page-admin-${engine.name}-key-form`)
  await form.getByRole('textbox', { name: 'Name' }).fill('till-3')
  await form.getByRole('radio', { name: /^Sell\b/ }).check()
  await form.getByLabel('Last day it works (optional)').fill('2099-01-31')
  await form.getByRole('button', { name: 'Make key' }).click()

  // The secret, shown once, with a plain warning and Copy.
  const secretBox = keysPart(page).getByRole('textbox', { name: 'The new key for “till-3” (Sell)' })
  await secretBox.waitFor()
  const secret = await secretBox.inputValue()
  assert.match(secret, /^pcat_/)
  await page.waitForFunction(() => (document.activeElement as HTMLInputElement | null)?.value?.startsWith('pcat_') === true)
  await keysPart(page).getByText('Copy it now and give it to whoever will use it: it is not shown again.', { exact: false }).waitFor()
  await keysPart(page).getByRole('button', { name: 'Copy' }).click()
  await keysPart(page).getByText('Copied.', { exact: false }).waitFor()
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret)
  await page.getByRole('status').filter({ hasText: 'Made the key “till-3”.' }).waitFor()
  await bothWidths(page, 'key-secret', `browser-page-admin-${engine.name}-key-secret`)

  // The key does what it may and no more.
  assert.equal((await withKey(staff, secret, 'PATCH', `/v3/plant/${plant.id}`, { status: 'sold' })).status, 200)
  assert.equal((await withKey(staff, secret, 'POST', '/v3/plant', { name: 'Not allowed' })).status, 403)

  // Listed with what it may do, its last day and whether it works.
  const row = keyRow(page, 'till-3')
  await row.waitFor()
  const meta = await shownText(row)
  assert.match(meta, /^till-3\n/)
  for (const part of ['Sell', `Works through ${await dayName(page, '2099-01-31')}`, 'Works']) assert.ok(meta.includes(part), `${part} in ${JSON.stringify(meta)}`)

  // Done with the secret: it is gone from the page, and not shown again when the settings reopen.
  await keysPart(page).getByRole('button', { name: 'I have copied it' }).click()
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'New key')
  const secretShown = () => page.evaluate((s) => [...document.querySelectorAll('input')].some((input) => input.value === s) || document.body.innerText.includes(s), secret)
  assert.equal(await secretShown(), false)
  await until('its use recorded', async () => (await staff.call('GET', '/v3/keys')).body.items[0].lastUsedAt !== null)
  await settingsLink(page).click()
  await row.getByText('Last used', { exact: false }).waitFor()
  assert.equal(await secretShown(), false)

  // A name taken is said at the name, in words.
  await keysPart(page).getByRole('button', { name: 'New key' }).click()
  await form.getByRole('textbox', { name: 'Name' }).fill('till-3')
  await form.getByRole('radio', { name: /^Read only\b/ }).check()
  await form.getByRole('button', { name: 'Make key' }).click()
  await form.getByText('A key named “till-3” exists already (a revoked key keeps its name). Choose another name.').waitFor()
  await form.getByRole('button', { name: 'Cancel' }).click()
  assert.ok(await form.isHidden())

  await bothWidths(page, 'keys', `browser-page-admin-${engine.name}-keys`)

  // Revoke asks first, naming the key; Cancel changes nothing.
  await row.getByRole('button', { name: 'Revoke: till-3' }).click()
  const question = page.getByRole('alertdialog', { name: 'Revoke the key “till-3”?' })
  await question.getByText('“till-3” stops working at once, wherever it is used. This cannot be undone', { exact: false }).waitFor()
  await question.getByRole('button', { name: 'Cancel' }).click()
  assert.equal((await withKey(staff, secret, 'GET', '/v3/plant/count')).status, 200)
  await row.getByRole('button', { name: 'Revoke: till-3' }).click()
  await question.getByRole('button', { name: 'Revoke key' }).click()
  await page.getByRole('status').filter({ hasText: 'Revoked “till-3”: it no longer works.' }).waitFor()
  await row.locator('.status').filter({ hasText: 'Revoked' }).waitFor()
  assert.equal(await row.getByRole('button').count(), 0, 'a revoked key offers nothing more')
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'till-3', 'focus stays on the key')
  assert.equal((await withKey(staff, secret, 'PATCH', `/v3/plant/${plant.id}`, { status: 'available' })).status, 401)

  // A key of the environment cannot be revoked here, and the page says why. The list never names
  // one (the service does not list them), so a revoke of another key is sent as env-1's.
  const other = await staff.call('POST', '/v3/keys', { name: 'shop-front', scope: 'read' })
  assert.equal(other.status, 201)
  await settingsLink(page).click()
  await page.route('**/v3/keys/shop-front', (route) => route.continue({ url: `${staff.url}/v3/keys/env-1` }))
  await keyRow(page, 'shop-front').getByRole('button', { name: 'Revoke: shop-front' }).click()
  await page.getByRole('alertdialog', { name: 'Revoke the key “shop-front”?' }).getByRole('button', { name: 'Revoke key' }).click()
  await page.getByRole('status').filter({ hasText: '“shop-front” was not revoked: it is set up where the catalogue runs, not here. Whoever runs the catalogue removes it from its settings and restarts it.' }).waitFor()
  assert.equal((await staff.call('GET', '/v3/plant/count')).status, 200, 'env-1 still works')

  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [409, 409], 'the refusals the page met: the name taken, env-1')
}, OWN_SERVICE) // it reads the key list as empty before its key

staffPageTest('a manager connects a system (its secret shown once), sends a test and sees what it answered, pauses and resumes it, reads its deliveries, sees a failing one marked plainly, and removes one after a question', async (staff, { t, engine }) => {
  const { page } = staff
  const shop = await receiver(t)
  const broken = await receiver(t, 'fail')
  await page.goto(staff.url + '/?view=settings')
  await systemsPart(page).getByRole('button', { name: 'Give a manager’s key' }).click()
  await giveKey(page)
  const systems = systemsPart(page)
  await systems.getByText('No other system is told of changes yet.').waitFor()

  // An address the service refuses is said at the address, in words.
  await systems.getByRole('button', { name: 'Add system' }).click()
  const form = page.getByRole('form', { name: 'Add system' })
  const address = form.getByRole('textbox', { name: 'Address' })
  await address.fill('shop.example/hooks')
  await form.getByRole('button', { name: 'Connect' }).click()
  await form.getByText('Enter the whole address, starting with https:// (or http://).').waitFor()
  await address.fill('https://user:secret@shop.example/hooks')
  await form.getByRole('button', { name: 'Connect' }).click()
  await form.getByText('Leave out the user name and password: the system checks each message with the secret it is given instead.').waitFor()
  assert.equal((await staff.call('GET', '/v3/webhooks')).body.items.length, 0)

  // Added, told of every kind of change: its secret shown once, and it signs what the system gets.
  await address.fill(shop.url)
  await form.getByRole('button', { name: 'Connect' }).click()
  const secretBox = systems.getByRole('textbox', { name: `The signing secret for ${shop.url}` })
  await secretBox.waitFor()
  const secret = await secretBox.inputValue()
  assert.match(secret, /^whsec_/)
  await systems.getByText('Copy it now: it is not shown again.', { exact: false }).waitFor()
  const row = systems.locator('li.admin-item').filter({ hasText: shop.url })
  await row.getByText('Told when plants are added, changed or deleted').waitFor()
  assert.equal(await row.locator('.status').innerText(), 'Active')
  const fern = await staff.add({ name: 'Fern' })
  await until('the change delivered', () => shop.received.length === 1)
  const change = new Verifier(secret).verify(shop.received[0].body, shop.received[0].headers as Record<string, string>) as { id: number }
  assert.equal(change.id, fern.id)
  await systems.getByRole('button', { name: 'I have copied it' }).click()

  // A test, and what the system answered.
  await row.getByRole('button', { name: `Send a test: ${shop.url}` }).click()
  await row.getByText(/^Test sent .+: received\.$/).waitFor()
  await page.getByRole('status').filter({ hasText: `Test sent to ${shop.url}: received.` }).waitFor()
  assert.equal(JSON.parse(shop.received.at(-1)!.body).kind, 'test')

  // Its deliveries: when, which change, how it went (the change's attempt is recorded with the cursor).
  await until('the delivery recorded', async () => (await staff.call('GET', '/v3/webhooks')).body.items[0].deliveredUpTo > 0)
  await row.getByRole('button', { name: `Recent deliveries: ${shop.url}` }).click()
  const table = row.getByRole('table', { name: `Recent deliveries to ${shop.url}, newest first` })
  await table.waitFor()
  const cells = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent)))
  const seq = (await staff.call('GET', '/v3/webhooks')).body.items[0].deliveredUpTo
  assert.deepEqual(cells, [['Test', 'Received'], [`Change no. ${seq}`, 'Received']])

  // Paused: told nothing; resumed: it gets what it missed.
  await row.getByRole('button', { name: `Pause: ${shop.url}` }).click()
  await page.getByRole('status').filter({ hasText: `Paused ${shop.url}: it is told nothing until it is resumed.` }).waitFor()
  await row.locator('.status').filter({ hasText: 'Paused' }).waitFor()
  await row.getByText('Paused: nothing is sent until it is resumed', { exact: false }).waitFor()
  assert.equal((await staff.call('GET', '/v3/webhooks')).body.items[0].status, 'paused')
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Resume', 'focus stays on the button, now Resume')
  const received = shop.received.length
  await staff.add({ name: 'Ivy' })
  await row.getByRole('button', { name: `Resume: ${shop.url}` }).click()
  await row.locator('.status').filter({ hasText: 'Active' }).waitFor()
  await table.waitFor()
  assert.equal(await row.getByRole('button', { name: `Recent deliveries: ${shop.url}` }).getAttribute('aria-expanded'), 'true', 'the deliveries stay open when the list is read again')
  await until('the missed change delivered', () => shop.received.some((r, i) => i >= received && JSON.parse(r.body).plant?.name === 'Ivy'))

  // A system that answers with a fault fails; it is marked plainly, with since when and why.
  assert.equal((await staff.call('POST', '/v3/webhooks', { url: broken.url, events: ['created'] })).status, 201)
  await staff.add({ name: 'Moss' })
  await until('failing', async () => (await staff.call('GET', '/v3/webhooks')).body.items.some((w: any) => w.status === 'failing'))
  await systems.getByRole('button', { name: 'Check again' }).click()
  const failing = systems.locator('li.admin-item').filter({ hasText: broken.url })
  await failing.locator('.status').filter({ hasText: 'Failing' }).waitFor()
  await failing.getByText('Told when plants are added').waitFor()
  assert.match(await failing.locator('.admin-problem').innerText(),
    /^Failing since .+: not received: the system had a fault of its own\. Nothing more is sent until it is resumed; it then gets every change it missed, oldest first\.$/)
  await failing.getByRole('button', { name: `Send a test: ${broken.url}` }).click()
  await failing.getByText(/^Test sent .+: not received: the system had a fault of its own\.$/).waitFor()
  await bothWidths(page, 'systems', `browser-page-admin-${engine.name}-systems`)

  // Removed after a question naming it.
  await failing.getByRole('button', { name: `Remove: ${broken.url}` }).click()
  const question = page.getByRole('alertdialog', { name: 'Remove this system?' })
  await question.getByText(`${broken.url} will no longer be told of changes.`, { exact: false }).waitFor()
  await question.getByRole('button', { name: 'Remove' }).click()
  await page.getByRole('status').filter({ hasText: `Removed ${broken.url}: it is told of no more changes.` }).waitFor()
  await failing.waitFor({ state: 'detached' })
  assert.deepEqual((await staff.call('GET', '/v3/webhooks')).body.items.map((w: any) => w.url), [shop.url])

  assert.deepEqual(unexpectedErrors(staff.errors), [])
  assert.deepEqual(await staff.refusedStatuses(), [400], 'the one refusal the page met: the address with a password')
})

staffPageTest('a key that is not a manager’s is told a manager’s key is needed, and offered to give one; the rest of the page works on', async (staff, { engine }) => {
  const { page } = staff
  await staff.add({ name: 'Basil' })
  const counter = await staff.call('POST', '/v3/keys', { name: 'counter', scope: 'write' })
  assert.equal(counter.status, 201)
  await page.goto(staff.url + '/')
  await plantButton(page, 'Basil').waitFor()
  await page.evaluate((key) => sessionStorage.setItem('plants.apiKey', key), counter.body.secret)

  await settingsLink(page).click()
  const keys = keysPart(page)
  await keys.getByText('A manager’s key is needed to see and change the keys.').waitFor()
  await keys.getByText('The key this tab holds is not a manager’s key: it may not do this.', { exact: false }).waitFor()
  await systemsPart(page).getByText('A manager’s key is needed to see and change the connected systems.').waitFor()
  // The tab's own key, the currency: as they were.
  await page.getByText('A staff key is kept in this browser tab. It is forgotten when the tab closes.').waitFor()
  assert.equal(await page.evaluate(() => sessionStorage.getItem('plants.apiKey')), counter.body.secret, 'a key of lower scope is kept: it is not refused')
  await bothWidths(page, 'needed', `browser-page-admin-${engine.name}-needed`)

  // The plants still open and save with that key.
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Plants' }).click()
  await plantButton(page, 'Basil').click()
  const editor = page.getByRole('dialog', { name: 'Edit plant' })
  await editor.getByRole('textbox', { name: 'Category' }).fill('herbs')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Saved “Basil”.' }).waitFor()

  // Given a manager's key from the settings, the parts show what they hold.
  await settingsLink(page).click()
  await keys.getByRole('button', { name: 'Give a manager’s key' }).click()
  await giveKey(page)
  await keys.locator('li[data-name="counter"]').waitFor()
  await systemsPart(page).getByText('No other system is told of changes yet.').waitFor()
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Keys', 'focus goes to the part the key was given from')

  // Forgetting the key puts them back to asking for one.
  await page.getByRole('region', { name: 'Your staff key' }).getByRole('button', { name: 'Forget key' }).click()
  await keys.getByText('This tab holds no staff key.', { exact: false }).waitFor()
  assert.deepEqual(unexpectedErrors(staff.errors), [])
  // Refused only where a manager's key is needed, each time the settings were opened with the till's key.
  assert.deepEqual(staff.refusals, [`403 ${staff.url}/v3/keys`, `403 ${staff.url}/v3/keys`])
})

staffPageTest('the keyboard alone makes a key, copies it, and revokes one, with the focus visible at each step', async (staff) => {
  const { page } = staff
  await page.goto(staff.url + '/?view=settings')
  await keysPart(page).getByRole('button', { name: 'Give a manager’s key' }).waitFor()
  await page.evaluate((key) => sessionStorage.setItem('plants.apiKey', key), KEY)
  await page.reload()
  await keysPart(page).getByText('No keys have been made here yet.').waitFor()
  const focused = () => page.evaluate(() => {
    const node = document.activeElement as HTMLElement
    return { text: node.getAttribute('aria-label') ?? node.textContent?.trim() ?? '', tag: node.tagName, type: node.getAttribute('type'), outline: getComputedStyle(node).outlineStyle }
  })
  /** Presses Tab until the focus is on `text` (at most `most` times), each stop's focus visible. */
  const tabTo = async (text: string, most = 20): Promise<void> => {
    for (let i = 0; i < most; i++) {
      await page.keyboard.press('Tab')
      const now = await focused()
      assert.notEqual(now.outline, 'none', `focus on ${now.tag} ${now.type} ${now.text} is visible`)
      if (now.text === text) return
    }
    assert.fail(`Tab never reached ${text}`)
  }

  await page.locator('#settings-title').focus()
  await tabTo('New key')
  await page.keyboard.press('Enter')
  assert.equal((await focused()).tag, 'INPUT', 'focus goes to the name')
  await page.keyboard.type('shop-front')
  await page.keyboard.press('Tab')
  // The first choice takes the focus; arrows move between them and choose.
  await page.keyboard.press('Space')
  assert.equal(await page.getByRole('radio', { name: /^Read only\b/ }).isChecked(), true)
  await tabTo('Make key')
  await page.keyboard.press('Enter')
  await keysPart(page).getByRole('textbox', { name: 'The new key for “shop-front” (Read only)' }).waitFor()
  await page.waitForFunction(() => (document.activeElement as HTMLInputElement | null)?.value?.startsWith('pcat_') === true)
  await tabTo('Copy', 2)
  await tabTo('I have copied it', 2)
  await page.keyboard.press('Enter')
  assert.equal((await focused()).text, 'New key')

  // Revoke from the keyboard: the question opens on Cancel, so Enter there does no harm.
  await page.keyboard.press('Shift+Tab')
  for (let i = 0; i < 5 && (await focused()).text !== 'Revoke: shop-front'; i++) await page.keyboard.press('Shift+Tab')
  assert.equal((await focused()).text, 'Revoke: shop-front')
  await page.keyboard.press('Enter')
  const question = page.getByRole('alertdialog', { name: 'Revoke the key “shop-front”?' })
  await question.waitFor()
  assert.equal((await focused()).text, 'Cancel')
  await page.keyboard.press('Shift+Tab')
  assert.equal((await focused()).text, 'Revoke key')
  await page.keyboard.press('Enter')
  await keyRow(page, 'shop-front').locator('.status').filter({ hasText: 'Revoked' }).waitFor()
  assert.equal((await focused()).text, 'shop-front', 'focus is on the revoked key')
  assert.equal((await staff.call('GET', '/v3/keys')).body.items[0].status, 'revoked')
  assert.deepEqual(unexpectedErrors(staff.errors), [])
}, OWN_SERVICE) // its Tab stops and the first listed key are those of an empty key list

staffPageTest('a manager revoking the key the page itself uses is asked a second time, naming it; Cancel keeps it, the second yes revokes it', async (staff) => {
  const { page } = staff
  const made = await staff.call('POST', '/v3/keys', { name: 'lead', scope: 'admin' })
  assert.equal(made.status, 201)
  const secret: string = made.body.secret
  await page.goto(staff.url + '/')
  await settingsLink(page).click()
  await keysPart(page).getByRole('button', { name: 'Give a manager’s key' }).click()
  await giveKey(page, secret)
  const revoke = async (): Promise<void> => {
    await keyRow(page, 'lead').getByRole('button', { name: 'Revoke: lead' }).click()
    await page.getByRole('alertdialog', { name: 'Revoke the key “lead”?' }).getByRole('button', { name: 'Revoke key' }).click()
  }
  const again = page.getByRole('alertdialog', { name: 'Revoke the key this page uses?' })
  await revoke()
  await again.getByText('“lead” is the key this page is using. Revoked, it stops working here too', { exact: false }).waitFor()
  await again.getByRole('button', { name: 'Cancel' }).click()
  await page.getByRole('status').filter({ hasText: '“lead” was not revoked.' }).waitFor()
  assert.equal((await withKey(staff, secret, 'GET', '/v3/keys')).status, 200, 'still works')
  await revoke()
  await again.getByRole('button', { name: 'Revoke it anyway' }).click()
  await page.getByRole('status').filter({ hasText: 'Revoked “lead”: it no longer works.' }).waitFor()
  assert.equal((await withKey(staff, secret, 'GET', '/v3/keys')).status, 401)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})

staffPageTest('a key revoked while its secret is still shown takes the secret off the screen', async (staff) => {
  const { page } = staff
  await page.goto(staff.url + '/?view=settings')
  await keysPart(page).getByRole('button', { name: 'Give a manager’s key' }).click()
  await giveKey(page)
  await keysPart(page).getByText('No keys have been made here yet.').waitFor()
  await keysPart(page).getByRole('button', { name: 'New key' }).click()
  const form = page.getByRole('form', { name: 'New key' })
  await form.getByRole('textbox', { name: 'Name' }).fill('till-9')
  await form.getByRole('radio', { name: /^Sell\b/ }).check()
  await form.getByRole('button', { name: 'Make key' }).click()
  const secretBox = keysPart(page).getByRole('textbox', { name: 'The new key for “till-9” (Sell)' })
  const secret = await secretBox.inputValue()
  assert.match(secret, /^pcat_/)

  // Revoked before "I have copied it": the secret opens nothing now, and nothing shows it.
  await keyRow(page, 'till-9').getByRole('button', { name: 'Revoke: till-9' }).click()
  await page.getByRole('alertdialog', { name: 'Revoke the key “till-9”?' }).getByRole('button', { name: 'Revoke key' }).click()
  await page.getByRole('status').filter({ hasText: 'Revoked “till-9”: it no longer works.' }).waitFor()
  await secretBox.waitFor({ state: 'detached' })
  assert.equal(await page.evaluate((s) => [...document.querySelectorAll('input')].some((input) => input.value === s) || document.body.innerText.includes(s), secret), false)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
}, OWN_SERVICE) // it reads the key list as empty before its key

staffPageTest('a manager connects a system told only when a plant\'s stock runs low or runs out, as the API accepts', async (staff, { t, engine }) => {
  const { page } = staff
  const shop = await receiver(t)
  await page.goto(staff.url + '/?view=settings')
  await systemsPart(page).getByRole('button', { name: 'Give a manager’s key' }).click()
  await giveKey(page)
  const systems = systemsPart(page)
  await systems.getByRole('button', { name: 'Add system' }).click()
  const form = page.getByRole('form', { name: 'Add system' })
  await form.getByRole('textbox', { name: 'Address' }).fill(shop.url)
  for (const kind of ['added', 'changed', 'deleted']) await form.getByRole('checkbox', { name: kind, exact: true }).uncheck()
  assert.deepEqual(await Promise.all(['runs low', 'runs out'].map((kind) => form.getByRole('checkbox', { name: kind, exact: true }).isChecked())), [false, false], 'not checked at first')
  await form.getByRole('button', { name: 'Connect' }).click()
  await form.getByText('Choose at least one kind of change.').waitFor()
  await form.getByRole('checkbox', { name: 'runs low', exact: true }).check()
  await form.getByText('Choose at least one kind of change.').waitFor({ state: 'hidden' })
  await form.getByRole('checkbox', { name: 'runs out', exact: true }).check()
  await bothWidths(page, 'a system told of stock running low or out', `browser-page-admin-${engine.name}-stock-system`)
  const sent = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/v3/webhooks'))
  await form.getByRole('button', { name: 'Connect' }).click()
  assert.deepEqual((await sent).postDataJSON(), { url: shop.url, events: ['stock.low', 'stock.out'] })
  const row = systems.locator('li.admin-item').filter({ hasText: shop.url })
  await row.getByText('Told when a plant\'s stock runs low or runs out').waitFor()
  const hooks = (await staff.call('GET', '/v3/webhooks')).body.items
  assert.deepEqual(hooks.map((h: { events: string[] }) => h.events), [['stock.low', 'stock.out']])
  // The systems of this file's shared service are those each test adds.
  for (const hook of hooks) assert.equal((await staff.call('DELETE', `/v3/webhooks/${hook.id}`)).status, 204)
  assert.deepEqual(unexpectedErrors(staff.errors), [])
})
