import { api, type Plant } from './api.js'

// A barcode scanner types the code into the search box, fast, then presses Enter. The plant with
// that barcode or SKU opens; typed by hand and not a known code, Enter searches as usual.

const GTIN = /^(\d{8}|\d{12,14})$/
const SKU = /^[A-Za-z0-9._-]{1,64}$/

/** What the box held when the last burst of fast keystrokes (a scanner's) began, and the search then shown. */
let beforeBurst = ''
let answeredBeforeBurst = ''
let lastKeyAt = 0

/**
 * What in the search box may be a scanned code: a scanner types after whatever the box held, so
 * the text after the search last answered, the text after the last fast burst began, or all of it.
 */
function codesIn (text: string, answered: string): string[] {
  const after = (prefix: string): string => prefix !== '' && text.startsWith(prefix) ? text.slice(prefix.length).trim() : ''
  return [...new Set([after(answered.trim()), after(beforeBurst.trim()), text])].filter((code) => SKU.test(code))
}

/** Notes a key pressed in the search box, whose value is `value` before it, with the search `answered` on screen. */
export function keyPressed (event: KeyboardEvent, value: string, answered: string): void {
  // Keys far apart are a person typing: a burst that follows is a scanner's, after what the box holds now.
  if (event.key.length === 1 && event.timeStamp - lastKeyAt > 50) {
    beforeBurst = value
    answeredBeforeBurst = answered
  }
  lastKeyAt = event.timeStamp
}

/**
 * The search shown before the last burst began: what the box goes back to once a scanned plant
 * opens. (The list answers the burst's first key at once, as it does a person's, so the search
 * answered last may hold that key.)
 */
export function searchBeforeScan (): string {
  return answeredBeforeBurst
}

/** The plant whose barcode or SKU is in the search box's `text` (`answered`: the search last shown), if any. */
export async function scanned (text: string, answered: string): Promise<Plant | undefined> {
  const tries = codesIn(text, answered).flatMap((code) => [...GTIN.test(code) ? [`barcode=${code}`] : [], `sku=${encodeURIComponent(code)}`])
  for (const query of tries) {
    try {
      const { body } = await api<{ items: Plant[] }>('GET', `/v3/plant?${query}&limit=1`)
      const found = body.items[0]
      if (found !== undefined) return found
    } catch {
      // Not a code the catalogue takes (a barcode with a wrong check digit): a search, then.
    }
  }
  return undefined
}
