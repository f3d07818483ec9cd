import { byId, say } from './dom.js'
import { askKey, forgetKey, keyRequired, onKeyChange, storedKey } from './key.js'
import { currencyCode, currencyReady, money } from './money.js'

// The settings: the staff key this tab holds (change it, forget it) and the catalogue's currency,
// which every price is in (GET /v3 names it; it is set where the catalogue runs).

const keyState = byId('key-state')
const change = byId<HTMLButtonElement>('change-key')
const forget = byId<HTMLButtonElement>('settings-forget-key')
const said = byId('settings-status')

function showKey (): void {
  const held = storedKey() !== null
  keyState.textContent = !keyRequired
    ? 'This catalogue takes changes without a staff key.'
    : held
      ? 'A staff key is kept in this browser tab. It is forgotten when the tab closes.'
      : 'No staff key is kept in this tab. You are asked for one before your first change.'
  change.textContent = held ? 'Change key' : 'Give key'
  change.hidden = !keyRequired
  forget.hidden = !held
}

async function showCurrency (): Promise<void> {
  await currencyReady
  const code = currencyCode()
  if (code === '') {
    byId('currency-name').textContent = 'Not known: the catalogue could not be reached.'
    return
  }
  let name = code
  try {
    name = new Intl.DisplayNames([navigator.language], { type: 'currency' }).of(code) ?? code
  } catch {
    // An older browser without currency names: the code says it.
  }
  byId('currency-name').textContent = name === code ? code : `${name} (${code})`
  byId('currency-example').textContent = money('1234.50')
}

/**
 * The keys and connected systems, for a manager: a module of their own, fetched the first time the
 * settings are shown rather than with the page, which most staff use without ever managing.
 */
async function showManaging (): Promise<void> {
  let admin: typeof import('./admin.js')
  try {
    admin = await import('./admin.js')
  } catch {
    say(byId('admin-error'), 'The manager’s settings could not be loaded. Check the connection, then open the settings again.')
    return
  }
  await admin.showAdmin()
}

/** The settings view was shown: what it says is read afresh. */
export function showSettings (): void {
  say(said, '')
  say(byId('admin-error'), '')
  showKey()
  void showCurrency()
  void showManaging()
}

export function setUpSettings (): void {
  onKeyChange(showKey)
  change.addEventListener('click', () => {
    void askKey(false).then((key) => {
      // "Not now" keeps the key the tab had.
      if (key !== null) say(said, 'The new key is kept for this tab. It is checked at your next change.')
      change.focus()
    })
  })
  forget.addEventListener('click', () => {
    forgetKey()
    say(said, 'The key is forgotten. You will be asked for one before your next change.')
    change.focus()
  })
}
