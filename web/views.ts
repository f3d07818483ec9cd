import { readSection, sectionAddress, type Section } from './address.js'
import { byId } from './dom.js'

// The page's three views, one shown at a time: the plants, the trash and the settings. Each is a
// link in the header (the address says which, so reload, Back and a link work); the list keeps
// itself current behind the others, so coming back to it shows it as it is now.

interface ViewEvents {
  /** `section` was just shown (by a link, Back or Forward, or the first load). */
  shown (section: Section): void
  /** The address of the list as it stands (its search, filters and page). */
  listAddress (): string
}

const HEADINGS: Record<Section, string> = { list: 'plants-title', trash: 'trash-title', settings: 'settings-title' }
const TITLES: Record<Section, string> = { list: 'Plant catalogue', trash: 'Trash · Plant catalogue', settings: 'Settings · Plant catalogue' }
const SKIPS: Record<Section, string> = { list: 'Skip to the plants', trash: 'Skip to the trash', settings: 'Skip to the settings' }

let events: ViewEvents
let current: Section = 'list'

export const shownSection = (): Section => current

/** Shows `section` and no other; `focus`: its heading takes the focus (a link was followed). */
export function showSection (section: Section, focus: boolean): void {
  current = section
  for (const part of document.querySelectorAll<HTMLElement>('[data-section]')) part.hidden = part.dataset.section !== section
  for (const link of document.querySelectorAll<HTMLAnchorElement>('#views a[data-view]')) {
    if (link.dataset.view === section) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  document.title = TITLES[section]
  const skip = byId<HTMLAnchorElement>('skip')
  skip.href = `#${HEADINGS[section]}`
  skip.textContent = SKIPS[section]
  events.shown(section)
  if (focus) byId(HEADINGS[section]).focus()
}

function go (section: Section): void {
  if (section !== current) {
    history.pushState({}, '', section === 'list' ? events.listAddress() : sectionAddress(section))
  }
  showSection(section, true)
}

export function setUpViews (handlers: ViewEvents): void {
  events = handlers
  for (const link of document.querySelectorAll<HTMLAnchorElement>('#views a[data-view]')) {
    link.addEventListener('click', (event) => {
      // A new tab or window (Ctrl, Shift, the middle button) is the browser's to open.
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return
      event.preventDefault()
      go(link.dataset.view as Section)
    })
  }
  showSection(readSection(), false)
}
