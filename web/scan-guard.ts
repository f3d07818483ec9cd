import { say } from './dom.js'
import { BURST_MS } from './scanner.js'

/**
 * A scanner fired at an open plant types its code into the focused field, then presses Enter:
 * that Enter must not save the code into the plant's name. The field gets its text back, and the
 * form says why nothing was saved. (No person types six keys and Enter under 60 ms apart.) Into the
 * barcode or SKU field, a scan is meant, and Enter saves as usual.
 */
export function scanGuard (exempt: HTMLInputElement[], alertBox: HTMLElement): (event: KeyboardEvent) => void {
  /** The burst of fast keys typed into a field of the form so far: the field, its text before, how many keys. */
  let burst: { input: HTMLInputElement, before: string, keys: number } | undefined
  let lastKeyAt = -Infinity
  return (event) => {
    const input = event.target
    // Scanned into the barcode or SKU field, a code is where it belongs.
    if (!(input instanceof HTMLInputElement) || exempt.includes(input)) return
    const fast = event.timeStamp - lastKeyAt < BURST_MS
    lastKeyAt = event.timeStamp
    if (event.key === 'Enter') {
      if (fast && burst?.input === input && burst.keys >= 6) {
        event.preventDefault()
        input.value = burst.before
        input.dispatchEvent(new Event('input', { bubbles: true }))
        say(alertBox, 'That looked like a barcode scan, so nothing was saved. Close this plant, then scan again.')
      }
      burst = undefined
      return
    }
    if (event.key.length !== 1) return
    if (!fast || burst?.input !== input) burst = { input, before: input.value, keys: 0 }
    burst.keys++
  }
}
