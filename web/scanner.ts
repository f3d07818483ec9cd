import { api, ApiError, type Plant } from './api.js'

// A barcode scanner types the code into the search box, fast, then presses Enter. The plant with
// that barcode or SKU opens; typed by hand and not a known code, Enter searches as usual.

const GTIN = /^(\d{8}|\d{12,14})$/
const SKU = /^[A-Za-z0-9._-]{1,64}$/
/** Text that may be a SKU or barcode (one word with a digit): the name search finds no such plant; Enter looks it up. */
export const looksLikeCode = (text: string): boolean => SKU.test(text) && /\d/.test(text)

/** Keys closer together than this are a burst (a scanner's, a held key); a person's are further apart. */
export const BURST_MS = 60

/** A pause this long ends a run of typing: what follows is typed after what the box then held. */
const RUN_MS = 1000

/** What the box held when the last burst of fast keystrokes (a scanner's) began, and when the last run of typing began. */
let beforeBurst = ''
let beforeRun = ''
let lastKeyAt = -Infinity

/**
 * What in the search box may be a code, most likely first: a scanner types after whatever the box
 * held, so the text its burst added (a burst: a single key is a person's), or the text added since
 * the typing began (a scanner slowed by a busy machine breaks its burst); the digits at the end (a
 * barcode after a search); the last word (typed by hand after a search); all of it.
 */
function codesIn (text: string): string[] {
  const after = (prefix: string): string => prefix !== '' && text.startsWith(prefix) ? text.slice(prefix.length).trim() : ''
  const burst = after(beforeBurst)
  const digits = /\d{8,14}$/.exec(text)?.[0] ?? ''
  const lastWord = text.split(/\s+/).at(-1) ?? ''
  return [...new Set([burst.length >= 4 ? burst : '', after(beforeRun), GTIN.test(digits) ? digits : '', lastWord, text])].filter((code) => SKU.test(code))
}

/** Notes a key pressed in the search box, whose value is `value` before it. */
export function keyPressed (event: KeyboardEvent, value: string): void {
  // Keys far apart are a person typing: a burst that follows is a scanner's, after what the box holds now.
  if (event.key.length === 1 && event.timeStamp - lastKeyAt > BURST_MS) beforeBurst = value
  if (event.key.length === 1 && event.timeStamp - lastKeyAt > RUN_MS) beforeRun = value
  lastKeyAt = event.timeStamp
}

/** A scanned code that opened no plant: no plant has it, its check digit does not fit, or it has too few or too many digits. */
export interface Missed { code: string, why: 'unknown' | 'check-digit' | 'length' }

/**
 * The digits a scanner put at the end of `text`, whole: those typed since the typing began, else
 * the run of digits at the end. (Not its burst: the page's own work can slow a scanner's first
 * keys, and the burst would then name only the digits after them.)
 */
function scannedDigits (text: string): string {
  const typed = beforeRun !== '' && text.startsWith(beforeRun) ? text.slice(beforeRun.length).trim() : ''
  return /^\d{8,}$/.test(typed) ? typed : /\d{8,}$/.exec(text)?.[0] ?? ''
}

/** What staff are told of a scan that opened nothing, naming the digits read. */
export function missedWords ({ code, why }: Missed): string {
  if (why === 'check-digit') return `The barcode ${code} was misread: its last digit (the check digit) does not fit the digits before it. Scan it again.`
  if (why === 'length') return `The barcode was not read whole: ${code} has ${code.length} digits, and a barcode has 8, 12, 13 or 14. Scan it again.`
  return `No plant has the barcode ${code}. Check that it was scanned whole, or add the plant with it.`
}

/**
 * The plant whose barcode or SKU is at the end of the search box's `text`, and what the box held
 * before that code (the search to go back to); else the digits scanned and why they opened
 * nothing; else undefined (no code: a search).
 */
export async function scanned (text: string): Promise<{ plant: Plant, before: string } | { missed: Missed } | undefined> {
  const refused = new Set<string>()
  for (const code of codesIn(text)) {
    for (const query of [...GTIN.test(code) ? [`barcode=${code}`] : [], `sku=${encodeURIComponent(code)}`]) {
      try {
        const { body } = await api<{ items: Plant[] }>('GET', `/v3/plant?${query}&limit=1`)
        const plant = body.items[0]
        if (plant !== undefined) return { plant, before: text.slice(0, text.length - code.length).trim() }
      } catch (err) {
        // The catalogue takes no barcode with a wrong check digit: a misread scan (or a search).
        if (err instanceof ApiError && err.status === 400 && query.startsWith('barcode=')) refused.add(code)
      }
    }
  }
  const code = scannedDigits(text)
  if (code === '') return undefined
  return { missed: { code, why: !GTIN.test(code) ? 'length' : refused.has(code) ? 'check-digit' : 'unknown' } }
}
