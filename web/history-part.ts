import type { Plant } from './api.js'
import { byId, say } from './dom.js'
import type { EditorSide } from './history-editor.js'

// The editor's History part as the page loads it: the button, and what the editor tells it. The
// part itself (history-editor.ts and the modules it uses) is fetched the first time staff open a
// History, which keeps it out of the page's first load.

type Part = typeof import('./history-editor.js')

const section = byId('history')
const toggle = byId<HTMLButtonElement>('history-toggle')
const body = byId('history-body')
let part: Part | undefined
let loading: Promise<Part> | undefined
let side: EditorSide
let shown: { plant: Plant, etag: string } | undefined

/** A plant was opened in the editor (undefined: a new one, which has no history yet): its History is closed. */
export function resetHistory (plant: { plant: Plant, etag: string } | undefined): void {
  shown = plant === undefined ? undefined : { ...plant }
  if (part !== undefined) return part.resetHistory(shown)
  section.hidden = shown === undefined
  toggle.setAttribute('aria-expanded', 'false')
  body.hidden = true
}

/** The open plant changed (here or elsewhere): an open History follows. */
export function historyChanged (plant: Plant, etag: string): void {
  if (shown?.plant.id === plant.id) shown = { plant, etag }
  part?.historyChanged(plant, etag)
}

async function toggled (): Promise<void> {
  if (part === undefined) {
    loading ??= import('./history-editor.js')
    try {
      const loaded = await loading
      if (part === undefined) {
        loaded.setUpHistory(side)
        loaded.resetHistory(shown)
        part = loaded
      }
    } catch {
      // Said where the versions would be. A browser keeps a module that failed to load as failed
      // until the page is loaded again, so asking again here would fail the same way.
      toggle.setAttribute('aria-expanded', 'true')
      body.hidden = false
      say(byId('history-error'), 'The history could not be loaded. Check the connection, then reload the page.')
      return
    }
  }
  part.toggleHistory()
}

export function setUpHistory (editor: EditorSide): void {
  side = editor
  toggle.addEventListener('click', () => { void toggled() })
}
