import { api, ApiError, Cancelled, describe, type Plant } from './api.js'
import { byId, confirmFirst, el, say } from './dom.js'
import { listParts, VersionList } from './history.js'
import { changedFields, differences, fieldsAt, fieldsOf, versionOf, whenOf, type HistoryEntry } from './history-words.js'
import { notUndone } from './undo.js'

// The editor's History part: the open plant's versions, read when staff open it (not on every
// editor open) and again when the plant changes. An older version can be gone back to (POST
// revert with If-Match on the version the editor shows), after a confirmation naming what it
// changes; Undo, offered while the plant is open, goes back to the version before. Loaded the
// first time staff open a History (history-part.ts), not with the page.

export interface EditorSide {
  /** The plant the editor shows, and the ETag its saves are conditional on. */
  current (): { plant: Plant, etag: string } | undefined
  /** True when nothing typed would be lost, or staff chose to lose it (the editor's discard question). */
  discardFirst (): Promise<boolean>
  /** A version was gone back to (or undone): the editor shows the plant as it is now. */
  wentBack (plant: Plant, etag: string): void
  /** Someone changed the plant meanwhile: the editor reads it again, keeping what was typed. */
  reread (): Promise<void>
  /** The plant was deleted meanwhile. */
  gone (why: string): void
}

const section = byId('history')
const toggle = byId<HTMLButtonElement>('history-toggle')
const body = byId('history-body')
const status = byId('history-status')
const alertBox = byId('history-alert')
const undoButton = byId<HTMLButtonElement>('history-undo')
let editor: EditorSide
/** The plant as last read, which the versions are compared with. */
let head: { plant: Plant, etag: string } | undefined
/** The versions shown are the plant's as of the last change seen. */
let loaded = false
let busy = false
let undo: (() => Promise<void>) | undefined

const versions = new VersionList(listParts('history'), goBackButton)

/**
 * What the plant's fields would become at `entry`'s version (its status stays, as a revert keeps
 * it: a sale happened in the world); undefined when the versions shown do not reach the plant as last read.
 */
function changesAt (entry: HistoryEntry): string[] | undefined {
  if (head === undefined || versions.entries[0]?.version !== versionOf(head.etag)) return undefined
  const now = fieldsOf(head.plant)
  return differences(now, { ...fieldsAt(now, versions.entries, entry.version), status: now.status })
}

/** "Go back to this version" on each older version that changed a field and whose fields differ from now. */
function goBackButton (entry: HistoryEntry, describedBy: string): HTMLElement[] {
  if (head === undefined || entry.version >= versionOf(head.etag) || !changedFields(entry) || changesAt(entry)?.length === 0) return []
  const button = el('button', { class: 'small', text: 'Go back to this version', attrs: { type: 'button', 'data-role': 'go-back', 'aria-describedby': describedBy } })
  button.addEventListener('click', () => { void goBack(entry, button) })
  return [button]
}

function isOpen (): boolean {
  return toggle.getAttribute('aria-expanded') === 'true'
}

function setOpen (open: boolean): void {
  toggle.setAttribute('aria-expanded', String(open))
  body.hidden = !open
}

function offerUndo (run: (() => Promise<void>) | undefined): void {
  undo = run
  undoButton.hidden = run === undefined
}

function clearMessages (): void {
  say(status, '')
  say(alertBox, '')
  offerUndo(undefined)
}

/** A plant was opened in the editor (undefined: a new one, which has no history yet): its history is closed until asked for. */
export function resetHistory (shown: { plant: Plant, etag: string } | undefined): void {
  versions.clear()
  head = shown === undefined ? undefined : { ...shown }
  loaded = false
  section.hidden = shown === undefined
  setOpen(false)
  clearMessages()
}

/** The open plant changed (here or elsewhere; `plant` is it as it is now): the history shown follows, a closed one is read again when opened. */
export function historyChanged (plant: Plant, etag: string): void {
  if (head === undefined || head.plant.id !== plant.id) return
  head = { plant, etag }
  if (!isOpen()) {
    loaded = false
    return
  }
  void versions.load(plant.id, 'again')
}

/**
 * Focus back on `button`, or on its version's when the versions were drawn again meanwhile (the
 * part's heading when that version is gone); `scroll` false keeps a message above it in view.
 */
function refocus (button: HTMLButtonElement, version: number, scroll = true): void {
  const again = button.isConnected ? button : byId('history-list').querySelector<HTMLElement>(`li[data-version="${version}"] [data-role="go-back"]`)
  ;(again ?? toggle).focus({ preventScroll: !scroll })
}

async function goBack (entry: HistoryEntry, button: HTMLButtonElement): Promise<void> {
  const shown = editor.current()
  if (shown === undefined || busy) return
  clearMessages()
  if (!await editor.discardFirst()) {
    refocus(button, entry.version)
    return
  }
  const { plant, etag } = shown
  const when = whenOf(entry.at)
  // The versions shown may lag the plant by a change just made: read them again before naming what changes.
  if (changesAt(entry) === undefined && head !== undefined) await versions.load(head.plant.id, 'again')
  const changes = changesAt(entry)
  if (changes?.length === 0) {
    say(status, `“${plant.name}” already is as it was then: there is nothing to go back to.`)
    return
  }
  const what = changes === undefined ? 'Its fields become what they were then.' : `${changes.join('; ')}.`
  const text = `“${plant.name}” will be as it was on ${when}. ${what} Its status and photos stay as they are. You can undo this while the plant is open.`
  if (!await confirmFirst('Go back to this version?', text, 'Go back')) {
    refocus(button, entry.version)
    return
  }
  busy = true
  try {
    // If-Match on the version staff looked at: a change made since is not overwritten blindly.
    const answer = await api<Plant>('POST', `/v3/plant/${plant.id}/revert`, { body: { version: entry.version }, ifMatch: etag })
    const after = answer.etag ?? ''
    if (after === etag) {
      say(status, `“${plant.name}” already was as it was then: nothing was changed.`)
      return
    }
    editor.wentBack(answer.body, after)
    historyChanged(answer.body, after)
    say(status, `“${answer.body.name}” is back as it was on ${when}.`)
    offerUndo(() => undoGoingBack(answer.body.name, plant.id, versionOf(etag), after))
    undoButton.focus()
  } catch (err) {
    await refused(err, plant.name)
    alertBox.scrollIntoView({ block: 'nearest' })
    refocus(button, entry.version, false)
  } finally {
    busy = false
  }
}

async function refused (err: unknown, name: string): Promise<void> {
  if (err instanceof ApiError && err.status === 412) {
    say(alertBox, `Someone changed “${name}” just now, so it was not put back. It is shown as it is now: check its history and choose again.`)
    await editor.reread()
  } else if (err instanceof ApiError && err.code === 'version-not-kept') {
    say(alertBox, 'That version is too old to go back to: the catalogue no longer keeps it.')
    if (head !== undefined) await versions.load(head.plant.id, 'again')
  } else if (err instanceof ApiError && err.status === 404) {
    editor.gone(describe(err))
    say(alertBox, `“${name}” was not put back: someone deleted it.`)
  } else if (err instanceof ApiError && err.code === 'sku-taken') {
    const holder = err.problem?.holder
    say(alertBox, `“${name}” was not put back: another plant${holder === undefined ? '' : ` (number ${holder})`} has the SKU it had then. Change that plant’s SKU first.`)
  } else {
    say(alertBox, err instanceof Cancelled || (err instanceof ApiError && err.status === 403) ? describe(err) : `“${name}” was not put back. ${describe(err)}`)
  }
}

/** Undo of going back: back to the version before it, with If-Match on the version going back made. */
async function undoGoingBack (name: string, id: number, version: number, etag: string): Promise<void> {
  try {
    const answer = await api<Plant>('POST', `/v3/plant/${id}/revert`, { body: { version }, ifMatch: etag })
    editor.wentBack(answer.body, answer.etag ?? '')
    historyChanged(answer.body, answer.etag ?? '')
    say(status, `Undone: “${answer.body.name}” is back as it was.`)
  } catch (err) {
    say(status, '')
    if (err instanceof ApiError && err.status === 412) {
      say(alertBox, `Not undone: someone changed “${name}” since. It is shown as it is now.`)
      await editor.reread()
    } else {
      say(alertBox, notUndone(err, name))
    }
  }
  toggle.focus()
}

/** The History button: opened, the versions are read unless those shown are current. */
export function toggleHistory (): void {
  const open = !isOpen()
  setOpen(open)
  if (!open || loaded || head === undefined) return
  loaded = true
  void versions.load(head.plant.id, 'first').then((done) => { if (!done) loaded = false })
}

export function setUpHistory (side: EditorSide): void {
  editor = side
  undoButton.addEventListener('click', () => {
    const run = undo
    if (run === undefined || busy) return
    void (async () => {
      // Undo puts other fields in the form: typing not saved is asked about first, as for going back.
      if (!await editor.discardFirst()) {
        undoButton.focus()
        return
      }
      offerUndo(undefined)
      say(status, 'Undoing…')
      busy = true
      try {
        await run()
      } finally {
        busy = false
      }
    })()
  })
}
