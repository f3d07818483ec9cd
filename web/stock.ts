import { api, ApiError, describe, type Answer, type MovementResult, type Plant } from './api.js'
import { el } from './dom.js'
import { tell, warn } from './toast.js'
import { notUndone } from './undo.js'

// Stock as the list shows it, and the list's "Sell one": a sale of one unit at the store's main
// place (a movement, never a status set by hand), whose Undo puts the unit back with a return.

export type StockTotals = NonNullable<Plant['stock']>

/** A fresh Idempotency-Key: a till's retry of the same request moves stock once. */
export function newKey (): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return `page-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`
}

/** Low: available at or below the plant's threshold. */
export const isLow = (plant: Plant): boolean => plant.stock !== null && plant.lowStockAt !== null && plant.stock.available <= plant.lowStockAt

/** "12 on hand, 10 available", the stock as a row shows it. */
export const stockWords = (stock: StockTotals): string => `${stock.onHand.toLocaleString()} on hand, ${stock.available.toLocaleString()} available`

/** A row's stock, beside its price and codes: nothing for a plant that does not track stock. */
export function stockBadges (plant: Plant): HTMLElement[] {
  if (plant.stock === null) return []
  const badges: HTMLElement[] = [el('span', { class: 'stock', text: stockWords(plant.stock), attrs: { 'data-role': 'stock' } })]
  if (plant.stock.available === 0) badges.push(el('span', { class: 'stock-flag stock-out', text: 'None available' }))
  else if (isLow(plant)) badges.push(el('span', { class: 'stock-flag stock-low', text: 'Low stock' }))
  return badges
}

/** The plants' versions that movements from this page made; how many movements are on their way. */
const own = new Set<string>()
let moving = 0

/** A movement of plant `id`'s stock, as `key` names it. */
export async function moveStock (id: number, body: Record<string, unknown>, key: string): Promise<Answer<MovementResult>> {
  moving += 1
  try {
    const answer = await api<MovementResult>('POST', `/v3/plant/${id}/stock/movements`, { body, idempotencyKey: key })
    if (answer.etag !== null) own.add(answer.etag)
    return answer
  } finally {
    moving -= 1
  }
}

/** This version of a plant (its ETag) was made by a movement from here, or one is on its way: the editor does not say someone else made it. */
export const ownMovement = (etag: string | null): boolean => moving > 0 || (etag !== null && own.has(etag))

/** A movement of `delta` units at `where` (main unnamed, as a one-place store never names it), with its own Idempotency-Key. */
async function move (id: number, delta: number, reason: 'sale' | 'return', where = 'main'): Promise<MovementResult> {
  return (await moveStock(id, { delta, reason, ...(where === 'main' ? {} : { location: where }) }, newKey())).body
}

/** One unit sold at main; when main has none, where the units are (stock-elsewhere.ts, fetched only then). */
async function sale (plant: Plant): Promise<{ answer: MovementResult, where: string }> {
  try {
    return { answer: await move(plant.id, -1, 'sale'), where: 'main' }
  } catch (err) {
    if (!(err instanceof ApiError && err.code === 'insufficient-stock')) throw err
  }
  return (await import('./stock-elsewhere.js')).sellElsewhere(plant.id, plant.name, move)
}

/** Why a unit was not sold, in staff's words (never the API's detail). */
function notSold (name: string, err: unknown): string {
  if (err instanceof Error && (err as { said?: boolean }).said === true) return err.message
  if (err instanceof ApiError && err.status === 409) return `“${name}” was not sold: its stock changed just now. Try again.`
  return `“${name}” was not sold. ${describe(err)}`
}

const left = (available: number): string => available === 0 ? 'None left.' : `${available.toLocaleString()} left.`

type Part = typeof import('./stock-editor.js')
let part: Promise<Part> | undefined

/** The editor's Stock part, fetched the first time a plant is opened: the page's first load does not carry it. */
export function stockPart (): Promise<Part> {
  part ??= import('./stock-editor.js').then((loaded) => {
    loaded.setUpStockPart()
    return loaded
  })
  return part
}

/** After a movement here: the list and the open plant follow. */
let moved: () => void = () => {}

export function onMoved (handler: () => void): void {
  moved = handler
}

/** Stock was moved from the page (a sale, its undo, a receipt, a count). */
export const movedHere = (): void => moved()

/** Sell one buttons whose sale is on its way or made: a second click (a double click) sells nothing more. */
const selling = new WeakSet<HTMLButtonElement>()

/**
 * Sells one unit of `plant` from its row. The message says how many are left, with Undo (a return
 * of that unit, so a sale made since at another till is never taken back with it).
 */
export async function sellOne (plant: Plant, button: HTMLButtonElement): Promise<void> {
  if (selling.has(button)) return
  selling.add(button)
  // aria-disabled rather than disabled: the button keeps the focus (through the key dialog too).
  button.setAttribute('aria-disabled', 'true')
  try {
    const { answer, where } = await sale(plant)
    tell(`Sold one “${plant.name}”${where === 'main' ? '' : ` at ${where}`}. ${left(answer.stock.available)}`, async () => {
      try {
        const back = await move(plant.id, 1, 'return', where)
        movedHere()
        return `Undone: one “${plant.name}” is back in stock. ${back.stock.available.toLocaleString()} available.`
      } catch (err) {
        return notUndone(err, plant.name)
      }
    })
    movedHere()
  } catch (err) {
    selling.delete(button)
    button.removeAttribute('aria-disabled')
    warn(notSold(plant.name, err))
  }
}
