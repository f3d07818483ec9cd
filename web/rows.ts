import { plantAddress } from './address.js'
import type { Plant } from './api.js'
import { el } from './dom.js'
import { money } from './money.js'
import { stockBadges } from './stock.js'

// The list's rows. After a change (made here or elsewhere) the rows on screen keep their places:
// a row whose plant left the list's answer (sold under "For sale") or was deleted stays where it
// is until the list is loaded again, so the row under the pointer is the one staff aimed at.

export const STATUS_LABELS: Record<string, string> = { available: 'Available', pending: 'Pending', sold: 'Sold' }

/** " by till-3"; a key set where the catalogue runs with no name there (env-1 to the service) said as such. */
export function byWhom (actor: string | null): string {
  if (actor === null || actor === 'anonymous' || actor === '') return ''
  if (actor === 'cli') return ' from the command line'
  return /^env-\d+$/.test(actor) ? ' with a key set up where the catalogue runs' : ` by ${actor}`
}

export interface RowActions {
  open (id: number, opener: HTMLElement): void
  /** Sets a plant's status from its row: sold, or back to available. */
  mark (plant: Plant, status: 'sold' | 'available', button: HTMLButtonElement): void
  /** Sells one unit of a plant that tracks stock. */
  sell (plant: Plant, button: HTMLButtonElement): void
}

let events: RowActions

export function setRowActions (actions: RowActions): void {
  events = actions
}

/**
 * How a row stands: one of this list's answer, one that was on screen and no longer matches (kept
 * in its place until the list is loaded again), one deleted meanwhile, or one just added here.
 */
export type RowState = 'listed' | 'moved' | 'deleted' | 'added'

/** `putBack`: a sold plant's row offers Mark available. */
export function row (plant: Plant, state: RowState, putBack = true): HTMLLIElement {
  const li = state === 'deleted' ? deletedRow(plant) : plantRow(plant, state, putBack)
  shownRows.set(li, { plant, state })
  return li
}

function deletedRow (plant: Plant): HTMLLIElement {
  const thumb = el('span', { class: 'thumb thumb-empty', attrs: { 'aria-hidden': 'true' } })
  const name = el('p', { class: 'plant-name-gone', text: plant.name })
  return el('li', { class: 'plant gone', attrs: { 'data-id': String(plant.id) } }, thumb,
    el('div', { class: 'plant-text' }, name, el('span', { class: 'visually-hidden', text: ' (deleted; it goes when the list reloads)' })),
    el('span', { class: 'status status-gone', text: 'Deleted' }), el('div', { class: 'plant-actions' }))
}

function plantRow (plant: Plant, state: RowState, putBack: boolean): HTMLLIElement {
  const cover = plant.photos?.[0]
  const thumb = cover !== undefined
    ? el('img', { class: 'thumb', attrs: { src: cover.urls.thumb, alt: '', width: '56', height: '56', loading: 'lazy', decoding: 'async' } })
    : el('span', { class: 'thumb thumb-empty', attrs: { 'aria-hidden': 'true' } })
  const open = el('button', { class: 'plant-name', text: plant.name, attrs: { type: 'button', 'data-role': 'open' } })
  // Ctrl or ⌘ with a click, or the middle button, opens the plant at its own address in a new tab, as on a link.
  open.addEventListener('click', (event) => {
    if (event.ctrlKey || event.metaKey) window.open(plantAddress(plant.id), '_blank', 'noopener')
    else events.open(plant.id, open)
  })
  open.addEventListener('auxclick', (event) => {
    if (event.button === 1) window.open(plantAddress(plant.id), '_blank', 'noopener')
  })
  const meta = el('p', { class: 'plant-meta' })
  if (plant.category !== null) meta.append(el('span', { class: 'category', text: plant.category }))
  for (const t of plant.tags) meta.append(el('span', { class: 'tag', text: t }))
  if (plant.price !== null) meta.append(el('span', { class: 'price', text: money(plant.price) }))
  if (plant.sku !== null) meta.append(el('span', { class: 'code', text: `SKU ${plant.sku}` }))
  if (plant.barcode !== null) meta.append(el('span', { class: 'code', text: `Barcode ${plant.barcode}` }))
  meta.append(...stockBadges(plant))
  const badge = el('span', { class: `status status-${plant.status}`, text: STATUS_LABELS[plant.status] ?? plant.status })
  const actions = el('div', { class: 'plant-actions' })
  // A plant that tracks stock is sold a unit at a time; its status follows what is available.
  if (plant.stock !== null) {
    if (plant.stock.available > 0) actions.append(sellButton(plant))
  } else if (plant.status !== 'sold') actions.append(statusButton(plant, 'sold', 'Mark sold'))
  else if (putBack) actions.append(statusButton(plant, 'available', 'Mark available'))
  const text = el('div', { class: 'plant-text' }, open, meta)
  if (plant.description !== null) text.append(el('p', { class: 'plant-description', text: plant.description }))
  // Said to screen readers only: a visible line would make the row taller and move the rows below it.
  if (state === 'moved') text.append(el('span', { class: 'visually-hidden', text: ' (no longer matches this list; it stays here until the list reloads)' }))
  if (state === 'added') text.append(el('span', { class: 'visually-hidden', text: ' (just added)' }))
  return el('li', { class: `plant plant-${state}`, attrs: { 'data-id': String(plant.id) } }, thumb, text, badge, actions)
}

function statusButton (plant: Plant, status: 'sold' | 'available', words: string): HTMLButtonElement {
  // The visible words start the accessible name; the plant's name tells the buttons apart.
  const button = el('button', { class: 'small', text: words, attrs: { type: 'button', 'data-role': status, 'aria-label': `${words}: ${plant.name}` } })
  button.addEventListener('click', () => events.mark(plant, status, button))
  return button
}

function sellButton (plant: Plant): HTMLButtonElement {
  const button = el('button', { class: 'small', text: 'Sell one', attrs: { type: 'button', 'data-role': 'sell', 'aria-label': `Sell one: ${plant.name}` } })
  button.addEventListener('click', () => events.sell(plant, button))
  return button
}

/** Each row on screen: the plant it shows and how it stands. */
const shownRows = new WeakMap<HTMLLIElement, { plant: Plant, state: RowState }>()
/** Plants as the feed and the page's own writes last showed them, for rows that left the list's answer. */
const latest = new Map<number, Plant | null>()

/** What the page last learnt of a plant (a change in the feed, or its own write): null once deleted. */
export function note (id: number, plant: Plant | null): void {
  latest.set(id, plant)
  if (latest.size > 1000) latest.delete(latest.keys().next().value!)
}

/**
 * The rows on screen, each kept in its place with the plant as it is now: still listed, moved out
 * of this list (sold under "For sale", renamed out of a search) or deleted; plants new to this page
 * come after them. A row whose plant did not change is the same element, so a click begun on it
 * lands on it.
 */
export function merge (list: HTMLUListElement, plants: Plant[]): HTMLLIElement[] {
  const fresh = new Map(plants.map((p) => [p.id, p]))
  const rows: HTMLLIElement[] = []
  const onScreen = new Set<number>()
  for (const li of list.querySelectorAll<HTMLLIElement>(':scope > li')) {
    const was = shownRows.get(li)
    if (was === undefined) continue
    const id = was.plant.id
    onScreen.add(id)
    const known = latest.get(id)
    const now = fresh.get(id) ?? known
    const state: RowState = now === null ? 'deleted' : was.state === 'added' ? 'added' : fresh.has(id) ? 'listed' : 'moved'
    const plant = now ?? was.plant
    if (was.state === state && JSON.stringify(was.plant) === JSON.stringify(plant)) {
      rows.push(li)
      continue
    }
    // Never shorter than the row it replaces: the rows below it stay where they were.
    // Sold while on screen, the row offers no Mark available (Undo in the message puts it back):
    // a second click where Mark sold was must not take the sale back.
    const again = row(plant, state, was.plant.status === 'sold')
    again.style.minHeight = `${li.getBoundingClientRect().height}px`
    rows.push(again)
  }
  for (const plant of plants) if (!onScreen.has(plant.id)) rows.push(row(plant, 'listed'))
  return rows
}
