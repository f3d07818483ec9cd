import { byId, timing } from './dom.js'

// What just happened, at the foot of the window, in the status line screen readers announce
// politely. A change made from the page offers Undo there for 15 seconds (the contract asks for
// at least 10); the message stays while the pointer or the focus is on it.

const box = byId('toast')
const message = byId('message')
const alertLine = byId('toast-alert')
const undoButton = byId<HTMLButtonElement>('undo')
const UNDO_MS = 15_000
let fade: number | undefined
let undo: (() => Promise<string>) | undefined

function hide (): void {
  if (box.matches(':hover, :focus-within')) {
    fade = window.setTimeout(hide, 2000)
    return
  }
  clear()
}

function clear (): void {
  message.textContent = ''
  alertLine.textContent = ''
  undoButton.hidden = true
  undo = undefined
  box.classList.remove('shown', 'error')
}

/**
 * The message goes to the top of the window when at the foot it would cover the row staff just
 * acted on (the one holding the focus): the page itself never moves, so the row under the pointer
 * stays the one they aimed at.
 */
function placeClear (): void {
  box.classList.remove('top')
  box.style.top = ''
  // In the header's flow on a phone: it covers nothing.
  if (getComputedStyle(box).position === 'static') return
  const row = document.activeElement instanceof HTMLElement ? document.activeElement.closest('li') : null
  if (row === null) return
  const at = row.getBoundingClientRect()
  const bar = box.getBoundingClientRect()
  if (at.bottom > bar.top && at.top < bar.bottom) {
    box.classList.add('top')
    // Under the header that stays: over it, the message hid the views.
    box.style.top = `${document.querySelector('header')!.getBoundingClientRect().bottom + 8}px`
  }
}

/**
 * Says `text`; given `undoIt`, with an Undo button that runs it once and says what it answers
 * (what was undone, or why it could not be).
 */
export function tell (text: string, undoIt?: () => Promise<string>): void {
  show(text, undoIt, false)
}

/** Says that something staff asked for was refused: in the alert line (announced at once), in a refusal's colour. */
export function warn (text: string): void {
  show(text, undefined, true)
}

function show (text: string, undoIt: (() => Promise<string>) | undefined, refusal: boolean): void {
  message.textContent = refusal ? '' : text
  alertLine.textContent = refusal ? text : ''
  alertLine.hidden = !refusal
  box.classList.toggle('error', refusal)
  undo = undoIt
  undoButton.hidden = undoIt === undefined
  undoButton.disabled = false
  box.classList.add('shown')
  placeClear()
  window.clearTimeout(fade)
  fade = window.setTimeout(hide, undoIt === undefined ? timing('messageMs') : UNDO_MS)
}

/** A refusal showing goes: staff acted since (sold from the open plant), so it is news no more. */
export function dropRefusal (): void {
  if (!box.classList.contains('error')) return
  window.clearTimeout(fade)
  clear()
}

/**
 * Ctrl+Z (⌘Z on a Mac) undoes what the message offers to, from wherever the focus is, but in a box
 * being typed in (there it takes back the typing, as everywhere) or with a dialog open over the page.
 */
function undoKey (event: KeyboardEvent): void {
  if (!(event.ctrlKey || event.metaKey) || event.shiftKey || event.altKey || event.key.toLowerCase() !== 'z') return
  if (undo === undefined || event.defaultPrevented || document.querySelector('dialog[open]') !== null) return
  const at = event.target
  if (at instanceof HTMLInputElement || at instanceof HTMLTextAreaElement || (at instanceof HTMLElement && at.isContentEditable)) return
  event.preventDefault()
  undoButton.click()
}

export function setUpToast (): void {
  document.addEventListener('keydown', undoKey)
  undoButton.addEventListener('click', () => {
    const run = undo
    if (run === undefined) return
    undo = undefined
    undoButton.disabled = true
    const refocus = document.activeElement === undoButton
    void run().then((said) => {
      tell(said)
      // The button is gone with the message: focus goes to the list rather than to the page.
      if (refocus) byId('plants-title').focus()
    })
  })
}
