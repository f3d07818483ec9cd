import { api, ApiError, describe, type LocationList, type MovementResult, type Plant, type StockLevel, type StockLevels } from './api.js'
import { byId, el, say } from './dom.js'
import { keyMay, onKeyChange } from './key.js'
import { movedHere, moveStock, newKey, stockWords } from './stock.js'
import { dropRefusal } from './toast.js'
import { notUndone } from './undo.js'

// The open plant's Stock part: what it holds at each place, and two movements made there:
// receiving units, and a count. A count is a compare and set on the units on hand at that place
// as staff saw them when they began counting (not as the live stream shows them since: a sale made
// while they count moves the shown level, and the count must not silently overwrite it). A change
// under a typed count is said beside the box; the save is then refused (409 stock-changed), the
// part shows the count as it is now and staff count again (or save theirs over it, on purpose).
// Neither is part of Save: each is written at once, as a movement. Each place holding units
// available sells one there ("Sell one at greenhouse"; the list's Sell one cannot tell where a pot came
// from when main has none and several places hold some), with Undo (a return there).

const part = byId('stock-part')
const summary = byId('stock-summary')
const table = byId('stock-levels')
const tableRows = byId('stock-rows')
const sellRow = byId('stock-sell')
const place = byId<HTMLSelectElement>('s-location')
const received = byId<HTMLInputElement>('s-received')
const counted = byId<HTMLInputElement>('s-counted')
const receiveButton = byId<HTMLButtonElement>('s-receive')
const countButton = byId<HTMLButtonElement>('s-count')
const movedNote = byId('s-counted-moved')
const statusBox = byId('stock-status')
const alertBox = byId('stock-alert')
const undoButton = byId<HTMLButtonElement>('s-undo')
/** Why Receive and Save count are off: said above them once a key that may only sell was refused them. */
const sellOnlyNote = el('p', { class: 'hint', attrs: { id: 's-sell-only' } })

let plant: Plant | undefined
let levels: StockLevel[] = []
/** The plant's totals when the levels were last read: another change to them reads them again. */
let readFor = ''
let controller: AbortController | undefined
/** A movement from this part is on its way. */
let busy = false
/** The last movement that got no answer, with its key: sent again unchanged, it moves stock once. */
let unanswered: { body: string, key: string } | undefined
/**
 * The units on hand staff saw at a place when they began typing its count: the count's `expected`.
 * Undefined while the box is empty (or before the levels were first read: taken when they are).
 */
let began: { where: string, onHand: number } | undefined
/** Undo of the last sale made here, offered beside what it said while the plant stays open. */
let undo: (() => Promise<void>) | undefined
/**
 * The tab's key was refused a receipt or a count (403): a till's, which may sell and return only.
 * Known before trying once the service said what the key may do; the next key given starts afresh.
 */
let refusedWrite = false
const sellOnly = (): boolean => refusedWrite || !keyMay('write')

/** A plant was opened (undefined: a new one, which holds no stock yet). */
export function showStock (shown: Plant | undefined): void {
  controller?.abort()
  plant = shown
  part.hidden = shown === undefined
  levels = []
  levelsRead = false
  readFor = ''
  unanswered = undefined
  began = undefined
  received.value = ''
  counted.value = ''
  offerUndo(undefined)
  // The place is chosen again for this plant (where it holds units, once they are read).
  place.replaceChildren()
  for (const box of [statusBox, alertBox, movedNote, byId('s-received-error'), byId('s-counted-error')]) say(box, '')
  for (const input of [received, counted]) input.removeAttribute('aria-invalid')
  render()
  if (shown !== undefined) void read()
}

/** The open plant changed (here or elsewhere): its levels are read again when its totals moved. */
export function stockChanged (now: Plant): void {
  if (plant?.id !== now.id) return
  plant = now
  if (JSON.stringify(now.stock) !== readFor) void read()
  else render()
}

/** The newest read of the levels: a change arriving meanwhile starts another, which aborts it. */
let reading: Promise<void> = Promise.resolve()
/** The levels of the open plant have been read at least once. */
let levelsRead = false

function read (): Promise<void> {
  reading = readNow()
  return reading
}

/** Once the newest read (whichever it is by then) is done: the levels are as the service last said. */
async function settled (): Promise<void> {
  let seen: Promise<void>
  do {
    seen = reading
    await seen
  } while (seen !== reading)
}

/** Reads the plant's levels (a plant that does not track stock has none), and the store's places for the choice of where. */
async function readNow (): Promise<void> {
  if (plant === undefined) return
  controller?.abort()
  const mine = new AbortController()
  controller = mine
  const at = plant
  const places = api<LocationList>('GET', '/v3/locations', { signal: mine.signal }).then((a) => a.body.items, () => undefined)
  try {
    const stock = at.stock === null ? [] : (await api<StockLevels>('GET', `/v3/plant/${at.id}/stock`, { signal: mine.signal })).body.items
    const names = await places
    if (mine.signal.aborted) return
    levels = stock
    readFor = JSON.stringify(at.stock)
    // Without the places (not read just now), main at least: a one-place store never names another.
    const chosen = place.value
    place.replaceChildren(...(names ?? [{ name: 'main' }]).map((p) => el('option', { text: p.name, attrs: { value: p.name } })))
    // First shown: main, or where the plant's units are when main is not among its places.
    const first = stock.length === 0 || stock.some((l) => l.location === 'main') ? 'main' : stock[0]!.location
    place.value = [...place.options].some((o) => o.value === chosen) ? chosen : first
    levelsRead = true
    // Typing began before the levels were first read: the count began against these.
    if (began === undefined && counted.value.trim() !== '') beginCount()
    render()
  } catch (err) {
    // A plant deleted meanwhile is said by the editor itself.
    if (mine.signal.aborted || (err instanceof ApiError && err.status === 404)) return
    say(alertBox, `The stock could not be read. ${describe(err)}`)
  }
}

function render (): void {
  const stock = plant?.stock ?? null
  const low = plant?.lowStockAt ?? null
  summary.textContent = stock === null
    ? 'This plant does not track stock: its status is set by hand. Receive or count units to track it.'
    : `${stockWords(stock)}${stock.reserved > 0 ? `, ${stock.reserved.toLocaleString()} reserved` : ''}.${low === null ? '' : ` Low at ${low.toLocaleString()} available or fewer.`}`
  tableRows.replaceChildren(...levels.map((l) => el('tr', {},
    el('th', { text: l.location, attrs: { scope: 'row' } }),
    ...[l.onHand, l.reserved, l.available].map((n) => el('td', { text: n.toLocaleString() })))))
  table.hidden = levels.length === 0
  // Drawn again as the levels move (here or at a till): the focus stays on the place's button.
  const focused = sellRow.contains(document.activeElement) ? document.activeElement?.textContent : undefined
  sellRow.replaceChildren(...levels.filter((l) => l.available > 0).map((l) => sellButton(l.location)))
  if (focused != null) [...sellRow.querySelectorAll('button')].find((b) => b.textContent === focused)?.focus()
  sellRow.hidden = sellRow.childElementCount === 0
  for (const control of [received, counted, receiveButton, countButton]) control.disabled = sellOnly()
  say(sellOnlyNote, sellOnly() ? 'This tab’s key may sell, not receive or count: give a key that changes plants (Settings, Forget key), or ask your manager.' : '')
  sayMoved()
}

function sellButton (where: string): HTMLButtonElement {
  const button = el('button', { text: `Sell one at ${where}`, attrs: { type: 'button' } })
  button.addEventListener('click', () => { void sellHere(where) })
  return button
}

const sellButtonAt = (where: string): HTMLButtonElement | undefined =>
  [...sellRow.querySelectorAll('button')].find((b) => b.textContent === `Sell one at ${where}`)

/** Says `text` in `box` and brings it into view above the editor's sticky buttons. */
function tellHere (box: HTMLElement, text: string): void {
  say(box, text)
  if (text !== '') box.scrollIntoView({ block: 'nearest' })
}

function offerUndo (run: (() => Promise<void>) | undefined): void {
  undo = run
  undoButton.hidden = run === undefined
  undoButton.disabled = false
}

/** One unit sold at `where`, the place staff took it from; Undo returns it there. */
async function sellHere (where: string): Promise<void> {
  if (busy || plant === undefined) return
  busy = true
  offerUndo(undefined)
  say(statusBox, '')
  say(alertBox, '')
  dropRefusal()
  const sold = plant
  try {
    const answer = await move({ delta: -1, reason: 'sale', location: where })
    // A sale made here where staff are counting is theirs, not a change to check.
    if (began?.where === where) began.onHand -= 1
    tellHere(statusBox, `Sold one “${sold.name}” at ${where}.${there(answer, where)}`)
    offerUndo(async () => {
      try {
        const back = await move({ delta: 1, reason: 'return', location: where })
        if (began?.where === where) began.onHand += 1
        tellHere(statusBox, `Undone: one “${sold.name}” is back at ${where}.${there(back, where)}`)
        await read()
        // Undo goes once it is done: the focus goes to the sale it took back, not to the page.
        sellButtonAt(where)?.focus()
        movedHere()
      } catch (err) {
        tellHere(alertBox, notUndone(err, sold.name))
      }
    })
    undoButton.focus()
    await read()
    movedHere()
  } catch (err) {
    tellHere(alertBox, err instanceof ApiError && err.code === 'insufficient-stock'
      ? `“${sold.name}” was not sold: none is available at ${where} now.`
      : `Nothing was changed. ${describe(err, 'This plant')}`)
  } finally {
    busy = false
  }
}

/** Staff began counting at the chosen place: its count is conditional on what it holds now. */
function beginCount (): void {
  const where = place.value || 'main'
  began = levelsRead ? { where, onHand: onHandAt(where) } : undefined
}

/** The count being typed no longer matches the place: said beside the box, so staff check it before saving. */
function sayMoved (): void {
  if (began === undefined || plant === undefined) return say(movedNote, '')
  const now = onHandAt(began.where)
  say(movedNote, now === began.onHand
    ? ''
    : `${now < began.onHand ? 'A sale' : 'A delivery'} at ${began.where} moved it from ${began.onHand.toLocaleString()} to ${now.toLocaleString()} on hand since you began: check your count.`)
}

/** A whole number of units typed in `input` (at least `least`), or undefined with the field's error said. */
function units (input: HTMLInputElement, least: number): number | undefined {
  const text = input.value.trim()
  const n = /^\d{1,9}$/.test(text) ? Number(text) : NaN
  const ok = n >= least
  input.setAttribute('aria-invalid', String(!ok))
  if (!ok) {
    // The refusal said before is news no more: this field's error is what staff read now.
    say(alertBox, '')
    dropRefusal()
    input.focus()
  }
  tellHere(byId(`${input.id}-error`), ok ? '' : `Enter a whole number of units, ${least} or more.`)
  return ok ? n : undefined
}

/** Sends a movement; the same movement sent again after no answer keeps its Idempotency-Key. */
async function move (body: Record<string, unknown>): Promise<MovementResult> {
  const text = JSON.stringify(body)
  const key = unanswered?.body === text ? unanswered.key : newKey()
  unanswered = { body: text, key }
  try {
    const answer = await moveStock(plant!.id, body, key)
    unanswered = undefined
    return answer.body
  } catch (err) {
    // A refusal moved nothing: the next try is a new movement. No answer at all may have moved it.
    if (err instanceof ApiError && err.status !== 0 && err.status < 500) unanswered = undefined
    throw err
  }
}

async function act (button: HTMLButtonElement, input: HTMLInputElement, least: number, body: (n: number) => Record<string, unknown>, said: (n: number, answer: MovementResult) => string): Promise<void> {
  if (busy || plant === undefined) return
  const n = units(input, least)
  if (n === undefined) return
  busy = true
  button.disabled = true
  offerUndo(undefined)
  say(statusBox, '')
  say(alertBox, '')
  dropRefusal()
  try {
    const answer = await move(body(n))
    input.value = ''
    // A count saved ends the counting; units received where staff are counting are theirs, not a change to check.
    if (input === counted) began = undefined
    else if (began?.where === answer.level.location) began.onHand += n
    tellHere(statusBox, said(n, answer))
    await read()
    movedHere()
  } catch (err) {
    await refused(err, input)
  } finally {
    busy = false
    button.disabled = sellOnly()
  }
}

async function refused (err: unknown, input: HTMLInputElement): Promise<void> {
  if (err instanceof ApiError && err.code === 'stock-changed') {
    // The count as it is now, read again: the next Save count is conditional on it.
    const where = place.value
    await read()
    await settled()
    const now = onHandAt(where)
    // Saving again is the explicit choice to put the count over what is there now.
    began = { where, onHand: now }
    sayMoved()
    tellHere(alertBox, `Not saved: the count at ${where} changed while you were counting (someone sold or received there). It is now ${now.toLocaleString()} on hand. Count again, then save your count.`)
    input.focus()
    return
  }
  if (err instanceof ApiError && err.status === 403) {
    refusedWrite = true
    render()
  }
  const where = place.value || 'main'
  const held = levels.find((l) => l.location === where)?.reserved ?? 0
  if (err instanceof ApiError && err.code === 'insufficient-stock' && held > 0) {
    // Units a web checkout holds are on the shelf but spoken for: no count may take them.
    tellHere(alertBox, `Not saved: ${held} at ${where} held for web checkouts cannot be counted away. Save at least ${held}, or count again once those checkouts are done or let go.`)
    input.focus()
    return
  }
  tellHere(alertBox, `Nothing was changed. ${describe(err, 'This plant')}`)
}

const onHandAt = (where: string): number => levels.find((l) => l.location === where)?.onHand ?? 0
const name = (): string => plant?.name ?? ''
const there = (answer: MovementResult, where: string): string => ` ${answer.level.onHand.toLocaleString()} on hand at ${where}.`

export function setUpStockPart (): void {
  byId('stock-part').querySelector('.stock-forms')!.before(sellOnlyNote)
  say(sellOnlyNote, '')
  onKeyChange(() => {
    refusedWrite = false
    render()
  })
  receiveButton.addEventListener('click', () => {
    const where = place.value || 'main'
    void act(receiveButton, received, 1, (n) => ({ delta: n, reason: 'received', location: where }),
      (n, answer) => `Received ${n.toLocaleString()} of “${name()}” at ${where}.${there(answer, where)}`)
  })
  countButton.addEventListener('click', () => {
    const where = place.value || 'main'
    const expected = began?.where === where ? began.onHand : onHandAt(where)
    void act(countButton, counted, 0, (n) => ({ set: n, expected, reason: 'count', location: where }),
      (n, answer) => `Counted ${n.toLocaleString()} of “${name()}” at ${where} (was ${(answer.movement.onHandAfter - answer.movement.delta).toLocaleString()}).`)
  })
  // The count begins with its first key (a box emptied ends it); another place chosen begins it there.
  counted.addEventListener('input', () => {
    if (counted.value.trim() === '') began = undefined
    else if (began === undefined) beginCount()
    sayMoved()
  })
  place.addEventListener('change', () => {
    if (counted.value.trim() !== '') beginCount()
    sayMoved()
  })
  undoButton.addEventListener('click', () => {
    const run = undo
    if (run === undefined || busy) return
    undoButton.disabled = true
    busy = true
    void run().finally(() => {
      busy = false
      offerUndo(undefined)
    })
  })
  // Enter in a box makes its movement, not the editor's Save.
  for (const [input, button] of [[received, receiveButton], [counted, countButton]] as const) {
    input.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter') return
      event.preventDefault()
      button.click()
    })
  }
}
