import { byId } from './dom.js'

// What just happened, at the foot of the window, in the status line screen readers announce
// politely. A change made from the page offers Undo there for 15 seconds (the contract asks for
// at least 10); the message stays while the pointer or the focus is on it.

const box = byId('toast')
const message = byId('message')
const undoButton = byId<HTMLButtonElement>('undo')
const PLAIN_MS = 6000
const UNDO_MS = 15_000
let fade: number | undefined
let undo: (() => Promise<string>) | undefined

function hide (): void {
  if (box.matches(':hover, :focus-within')) {
    fade = window.setTimeout(hide, 2000)
    return
  }
  message.textContent = ''
  undoButton.hidden = true
  undo = undefined
  box.classList.remove('shown')
}

/**
 * Says `text`; given `undoIt`, with an Undo button that runs it once and says what it answers
 * (what was undone, or why it could not be).
 */
export function tell (text: string, undoIt?: () => Promise<string>): void {
  message.textContent = text
  undo = undoIt
  undoButton.hidden = undoIt === undefined
  undoButton.disabled = false
  box.classList.add('shown')
  window.clearTimeout(fade)
  fade = window.setTimeout(hide, undoIt === undefined ? PLAIN_MS : UNDO_MS)
}

export function setUpToast (): void {
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
