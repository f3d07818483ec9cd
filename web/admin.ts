import { byId } from './dom.js'
import { askKey, keyRequired, onKeyChange, storedKey } from './key.js'
import { refusalOf, showRefusal, type Part } from './admin-parts.js'
import { keysPart } from './admin-keys.js'
import { systemsPart } from './admin-systems.js'
import { shownSection } from './views.js'

// The manager's parts of the settings: the keys and the connected systems. Imported by the
// settings when they are first opened, never on the first load of the page (most staff never
// manage). Both need a manager's key: without one (no key, or a till's) each says so and offers
// to take one, and nothing else on the page changes.

let parts: Part[] | undefined
let shown = 0

function setUp (): Part[] {
  if (parts !== undefined) return parts
  const give = (): void => {
    const from = document.activeElement instanceof HTMLElement ? document.activeElement : null
    const heading = from?.closest('section')?.querySelector<HTMLElement>('h3')
    void askKey(false).then((key) => {
      // A key given reloads the parts (the key's watcher below) under their headings; "Not now" changes nothing.
      if (key === null) from?.focus()
      else heading?.focus()
    })
  }
  const retry = (): void => { void showAdmin() }
  parts = [keysPart(give, retry), systemsPart(give, retry)]
  byId('admin').replaceChildren(...parts.map((part) => part.root))
  // A key given, changed or forgotten (here or in the key dialog) changes what these parts may show.
  onKeyChange(() => {
    if (shownSection() === 'settings') void showAdmin()
  })
  return parts
}

/** The settings were shown, or the tab's key changed: the keys, then the systems, are read afresh. */
export async function showAdmin (): Promise<void> {
  const [keys, systems] = setUp()
  const mine = ++shown
  keys.forget()
  systems.forget()
  if (keyRequired && storedKey() === null) {
    keys.needed('none')
    systems.needed('none')
    return
  }
  // One after the other: a refused key is asked for again once, not by both at the same time.
  try {
    await keys.load()
  } catch (err) {
    if (mine !== shown) return
    const refusal = refusalOf(err)
    showRefusal(keys, err)
    // The same key would be refused the same way by the systems.
    if (refusal !== undefined) return systems.needed(refusal)
  }
  if (mine !== shown) return
  try {
    await systems.load()
  } catch (err) {
    if (mine === shown) showRefusal(systems, err)
  }
}
