import { listKey, readSection, readView, state, writeView } from './address.js'
import { api, describe, UNREACHABLE, type Change, type Plant } from './api.js'
import { byId, debounce, say, timing } from './dom.js'
import { editedEtag, editedId, leave, openNew, openPlant, refresh, setUpEditor } from './editor.js'
import { loadCounts } from './inventory.js'
import { setUpKey } from './key.js'
import { currentView, load, restart, setUpList, showAdded, showView } from './list.js'
import { follow } from './live.js'
import { note, STATUS_LABELS } from './rows.js'
import { setUpPhotos } from './photos.js'
import { setUpSettings, showSettings } from './settings.js'
import { onMoved, sellOne } from './stock.js'
import { setUpToast, tell, warn } from './toast.js'
import { loadTrash, setUpTrash } from './trash.js'
import { onUndone, undoPatch } from './undo.js'
import { setUpViews, showSection, shownSection } from './views.js'

// Wires the parts of the staff page together. Module scripts run after the document is parsed.

let following = false

// A change made here or elsewhere: the rows on screen stay where they are, updated in place.
const refreshSoon = debounce(() => {
  void load(true)
  void loadCounts()
}, timing('refreshMs'))

function onChange (change: Change): void {
  note(change.id, change.plant)
  refreshSoon()
  void refresh(change)
}

/** Sells a plant from its row, or puts a sold one back on sale, with Undo. */
async function mark (plant: Plant, status: 'sold' | 'available', button: HTMLButtonElement): Promise<void> {
  // A disabled button loses focus to the page: keyboard users stay on the plant's name instead.
  if (document.activeElement === button) button.closest('li')?.querySelector<HTMLElement>('[data-role="open"]')?.focus()
  button.disabled = true
  try {
    const { body, etag } = await api<Plant>('PATCH', `/v3/plant/${plant.id}`, { body: { status }, contentType: 'application/merge-patch+json' })
    note(body.id, body)
    const again = `Undone: “${plant.name}” is ${(STATUS_LABELS[plant.status] ?? plant.status).toLowerCase()} again.`
    tell(`Marked “${plant.name}” as ${status}.`, undoPatch(plant.name, plant.id, { status: plant.status }, etag ?? '', again))
    refreshSoon()
  } catch (err) {
    button.disabled = false
    warn(`“${plant.name}” was not marked ${status}. ${describe(err)}`)
  }
}

setUpKey()
setUpToast()
onMoved(() => {
  refreshSoon()
  void refresh()
})
onUndone((plant) => {
  note(plant.id, plant)
  refreshSoon()
  void refresh()
})
/** Opens a plant, with its own history entry: Back closes it, and the address links to it. */
async function open (id: number, opener: HTMLElement, from: 'page' | 'address'): Promise<void> {
  if (from === 'page' && readView().plant !== id) writeView({ ...currentView(), plant: id }, 'push', { ...state(), opened: true })
  if (!await openPlant(id, opener)) forgetPlant()
}

/** The editor closed: the address no longer names the plant (Back, when opening it added the entry). */
function forgetPlant (): void {
  if (readView().plant === undefined) return
  if (state().opened === true) history.back()
  else writeView({ ...readView(), plant: undefined }, 'replace')
}

setUpList({
  open: (id, opener) => { void open(id, opener, 'page') },
  mark: (plant, status, button) => { void mark(plant, status, button) },
  sell: (plant, button) => { void sellOne(plant, button) },
  loaded: (position) => {
    // Follow the feed from the first page's position: nothing between that read and the stream is missed.
    if (following) return
    following = true
    follow(position, { change: onChange, resync, back })
  }
})
setUpEditor({
  written: (text, what = {}) => {
    tell(text, what.undo)
    if (what.plant !== undefined) note(what.plant.id, what.plant)
    if (what.deleted !== undefined) note(what.deleted, null)
    if (what.added === true && what.plant !== undefined) {
      showAdded(what.plant)
      // It stays open as "Edit plant": the address names it, as when a plant is opened any other way.
      const id = what.plant.id
      if (editedId() === id && readView().plant !== id) writeView({ ...currentView(), plant: id }, 'push', { ...state(), opened: true })
    }
    refreshSoon()
  },
  changed: (plant) => {
    note(plant.id, plant)
    refreshSoon()
  },
  closed: (opener, plantId) => {
    forgetPlant()
    window.setTimeout(() => {
      const target = opener?.isConnected === true
        ? opener
        : document.querySelector<HTMLElement>(`#plants li[data-id="${plantId}"] [data-role="open"]`) ?? byId('q')
      target.focus()
    }, 0)
  }
})
setUpPhotos({ plantId: editedId, etag: editedEtag, changed: () => refresh() })
setUpTrash({
  restored: (plant, message) => {
    tell(message)
    note(plant.id, plant)
    refreshSoon()
  },
  told: (message) => tell(message)
})
setUpSettings()
setUpViews({
  shown: (section) => {
    if (section === 'trash') void loadTrash()
    if (section === 'settings') showSettings()
  },
  listAddress: () => listKey(currentView())
})

/** The service or the stream is back: what is shown is read again, and the error goes. */
function back (): void {
  void load()
  void loadCounts()
  void refresh()
  if (shownSection() === 'trash') void loadTrash()
  if (shownSection() === 'settings') showSettings()
  // Said while the catalogue could not be reached, an alert is out of date now (in the open plant too: its Save can be sent again).
  for (const alert of document.querySelectorAll<HTMLElement>('[role="alert"]')) if (alert.textContent?.startsWith(UNREACHABLE) === true) say(alert, '')
}

// Back and Forward: the list the address names, and its plant open or closed.
window.addEventListener('popstate', () => {
  const section = readSection()
  if (section !== shownSection()) showSection(section, false)
  if (section !== 'list') {
    void leave()
    return
  }
  const view = readView()
  if (listKey(view) !== listKey(currentView())) {
    showView(view)
    void load()
  }
  const shown = editedId()
  if (view.plant === shown) return
  void (async () => {
    if (shown !== undefined && !await leave()) {
      // Staff kept their typing: the address names the plant again.
      writeView({ ...view, plant: shown }, 'push', { ...state(), opened: true })
      return
    }
    if (view.plant !== undefined) await open(view.plant, byId('q'), 'address')
  })()
})

function resync (): void {
  following = false
  tell('The list was reloaded to catch up with changes made elsewhere.')
  restart()
  void loadCounts()
}

byId('add').addEventListener('click', (event) => { void openNew(event.currentTarget as HTMLElement) })
// A file dropped beside the drop zone must not make the browser leave the page to show it.
for (const type of ['dragover', 'drop']) window.addEventListener(type, (event) => event.preventDefault())

void load()
void loadCounts()
const linked = readView().plant
if (linked !== undefined && readSection() === 'list') void open(linked, byId('q'), 'address')
