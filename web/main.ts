import { api, describe, type Change, type Plant } from './api.js'
import { byId, debounce } from './dom.js'
import { editedId, openNew, openPlant, refresh, setUpEditor } from './editor.js'
import { loadCounts } from './inventory.js'
import { setUpKey } from './key.js'
import { load, restart, setUpList } from './list.js'
import { follow } from './live.js'
import { setUpPhotos } from './photos.js'

// Wires the parts of the staff page together. Module scripts run after the document is parsed.

const message = byId('message')
let following = false
let fade: number | undefined

/**
 * Says what just happened, in the status line screen readers announce politely. It shows at the
 * foot of the window, wherever the list is scrolled to, and goes after a while.
 */
function tell (text: string): void {
  message.textContent = text
  window.clearTimeout(fade)
  fade = window.setTimeout(() => { message.textContent = '' }, 6000)
}

const refreshSoon = debounce(() => {
  void load()
  void loadCounts()
}, 150)

function onChange (change: Change): void {
  refreshSoon()
  void refresh(change)
}

async function markSold (plant: Plant, button: HTMLButtonElement): Promise<void> {
  // A disabled button loses focus to the page: keyboard users stay on the plant's name instead.
  if (document.activeElement === button) button.closest('li')?.querySelector<HTMLElement>('[data-role="open"]')?.focus()
  button.disabled = true
  try {
    await api('PATCH', `/v3/plant/${plant.id}`, { body: { status: 'sold' }, contentType: 'application/merge-patch+json' })
    tell(`Marked “${plant.name}” as sold.`)
    refreshSoon()
  } catch (err) {
    button.disabled = false
    tell(`“${plant.name}” was not marked sold. ${describe(err)}`)
  }
}

setUpKey()
setUpList({
  open: (id, opener) => { void openPlant(id, opener) },
  markSold: (plant, button) => { void markSold(plant, button) },
  loaded: (position) => {
    // Follow the feed from the first page's position: nothing between that read and the stream is missed.
    if (following) return
    following = true
    follow(position, { change: onChange, resync })
  }
})
setUpEditor({
  written: (text) => {
    tell(text)
    refreshSoon()
  },
  closed: (opener, plantId) => {
    window.setTimeout(() => {
      const target = opener?.isConnected === true
        ? opener
        : document.querySelector<HTMLElement>(`#plants li[data-id="${plantId}"] [data-role="open"]`) ?? byId('q')
      target.focus()
    }, 0)
  }
})
setUpPhotos({ plantId: editedId, changed: () => refresh() })

function resync (): void {
  following = false
  tell('The list was reloaded to catch up with changes made elsewhere.')
  restart()
  void loadCounts()
}

byId('add').addEventListener('click', (event) => openNew(event.currentTarget as HTMLElement))
// A file dropped beside the drop zone must not make the browser leave the page to show it.
for (const type of ['dragover', 'drop']) window.addEventListener(type, (event) => event.preventDefault())

void load()
void loadCounts()
