import { api, ApiError, Cancelled, describe, isAbort, type Plant } from './api.js'
import { byId, confirmFirst, el, say } from './dom.js'
import { byWhom, STATUS_LABELS } from './rows.js'

// The trash: plants deleted from the page or elsewhere, newest first, each with when and by whom.
// Restore brings one back (its id, fields and photos); with a manager's key one is removed for
// good. As in the list, a row acted on stays where it is, saying what was done, until the trash
// is loaded again, so the row under the pointer is the one staff aimed at. A row's History shows
// who changed the plant, and how, to read only (trash-history.ts, loaded when first asked for).

interface TrashEntry { id: number, version: number, trashedAt: string, purgeAt: string, trashedBy: string | null, plant: Plant }
interface TrashPage { items: TrashEntry[], nextCursor: string | null }

interface TrashEvents {
  /** A plant came back from the trash: the list and the counts follow. */
  restored (plant: Plant, message: string): void
  /** Something to tell staff in the page's message line. */
  told (message: string): void
}

const PAGE = 20
const list = byId<HTMLUListElement>('trash-list')
const summary = byId('trash-summary')
const failure = byId('trash-error')
const retry = byId<HTMLButtonElement>('trash-retry')
const empty = byId('trash-empty')
const wait = byId('trash-wait')
const more = byId<HTMLButtonElement>('trash-more')
let events: TrashEvents
let controller: AbortController | undefined
let nextCursor: string | null = null
let listed = 0
// What staff did to rows, numbered: a load asked for before an action answers with the trash as it
// was (a reconnect's reload can cross a restore or a removal in flight), and must not bring back
// the row's buttons over what staff were told was done.
let acted = 0
const outcomes = new Map<number, { at: number, badge: string, said: string }>()

const when = new Intl.DateTimeFormat(navigator.language, { dateStyle: 'medium', timeStyle: 'short' })
const day = new Intl.DateTimeFormat(navigator.language, { day: 'numeric', month: 'long' })
const dayOfYear = new Intl.DateTimeFormat(navigator.language, { day: 'numeric', month: 'long', year: 'numeric' })
const DAY = 86_400_000

/** "goes on 12 December": the day the purge takes it (with the year when not this one's). */
function goesLine (entry: TrashEntry): string {
  const at = new Date(entry.purgeAt)
  return `goes on ${(at.getFullYear() === new Date().getFullYear() ? day : dayOfYear).format(at)}`
}

/**
 * How long plants wait, as the service keeps them: every entry waits the same, so any one tells it.
 * Until one is listed the page cannot know, and keeps its general words.
 */
function sayWait (entry: TrashEntry | undefined): void {
  if (entry === undefined) return
  const ms = Date.parse(entry.purgeAt) - Date.parse(entry.trashedAt)
  const days = ms / DAY
  const hours = Math.max(1, Math.round(ms / 3_600_000))
  const span = Number.isInteger(days) ? `${days} day${days === 1 ? '' : 's'}` : `${hours} hour${hours === 1 ? '' : 's'}`
  wait.textContent = `Deleted plants wait ${span} here, then go for good with their photos.`
}

/** "Deleted 26 Nov 2026, 17:20 by till-3": who, when known (a change without a key has no name). */
function deletedLine (entry: TrashEntry): string {
  const by = byWhom(entry.trashedBy)
  return `Deleted ${when.format(new Date(entry.trashedAt))}${by}`
}

function entryRow (entry: TrashEntry): HTMLLIElement {
  const plant = entry.plant
  const cover = plant.photos[0]
  const thumb = cover !== undefined
    ? el('img', { class: 'thumb', attrs: { src: cover.urls.thumb, alt: '', width: '56', height: '56', loading: 'lazy', decoding: 'async' } })
    : el('span', { class: 'thumb thumb-empty', attrs: { 'aria-hidden': 'true' } })
  const was = (STATUS_LABELS[plant.status] ?? plant.status).toLowerCase()
  const meta = el('p', { class: 'plant-meta' }, el('span', { text: `${deletedLine(entry)}; it was ${was}` }))
  if (plant.category !== null) meta.append(el('span', { class: 'category', text: plant.category }))
  if (plant.photos.length > 0) meta.append(el('span', { text: plant.photos.length === 1 ? '1 photo' : `${plant.photos.length} photos` }))
  meta.append(el('span', { class: 'trash-goes', text: goesLine(entry), attrs: { title: `Removed for good from ${when.format(new Date(entry.purgeAt))}` } }))
  const text = el('div', { class: 'plant-text' }, el('p', { class: 'plant-title', text: plant.name }), meta)
  const badge = el('span', { class: 'status status-gone', text: 'Deleted' })
  const restore = el('button', { class: 'small', text: 'Restore', attrs: { type: 'button', 'aria-label': `Restore: ${plant.name}` } })
  const purge = el('button', { class: 'small danger', text: 'Remove for good…', attrs: { type: 'button', 'aria-label': `Remove for good: ${plant.name}` } })
  const past = el('button', { class: 'small', text: 'History', attrs: { type: 'button', 'aria-label': `History: ${plant.name}` } })
  const actions = el('div', { class: 'plant-actions' }, restore, purge, past)
  const li = el('li', { class: 'plant', attrs: { 'data-id': String(plant.id) } }, thumb, text, badge, actions)
  const outcome = outcomes.get(entry.id)
  if (outcome !== undefined) showOutcome(li, outcome.badge, outcome.said)
  restore.addEventListener('click', () => { void bringBack(entry, li, restore) })
  purge.addEventListener('click', () => { void removeForGood(entry, li, purge) })
  past.addEventListener('click', () => { void showHistory(plant, past) })
  return li
}

/** The plant's history, in its dialog (fetched the first time one is asked for, not with the page). */
async function showHistory (plant: Plant, button: HTMLButtonElement): Promise<void> {
  try {
    const { showTrashHistory } = await import('./trash-history.js')
    showTrashHistory(plant.id, plant.name, button)
  } catch {
    events.told(`The history of “${plant.name}” could not be loaded. Check the connection, then reload the page.`)
  }
}

function showOutcome (li: HTMLLIElement, badge: string, said: string): HTMLElement {
  li.classList.add('plant-moved')
  const outcome = el('p', { class: 'trash-outcome', text: said, attrs: { tabindex: '-1' } })
  li.querySelector('.status')?.replaceWith(el('span', { class: 'status status-done', text: badge }))
  li.querySelector('.plant-actions')?.replaceChildren(outcome)
  return outcome
}

/** The row says what became of its plant, in place; its buttons go, and focus stays in the row. */
function settle (entry: TrashEntry, li: HTMLLIElement, badge: string, said: string): void {
  outcomes.set(entry.id, { at: ++acted, badge, said })
  li.style.minHeight = `${li.getBoundingClientRect().height}px`
  showOutcome(li, badge, said).focus()
}

async function bringBack (entry: TrashEntry, li: HTMLLIElement, button: HTMLButtonElement): Promise<void> {
  const name = entry.plant.name
  button.disabled = true
  try {
    // If-Match on the entry as listed: a plant restored and deleted again since is not brought back blindly.
    const { body } = await api<Plant>('POST', `/v3/trash/${entry.id}/restore`, { ifMatch: `"${entry.id}.${entry.version}"` })
    settle(entry, li, 'Restored', 'Back in the list')
    events.restored(body, `Restored “${name}”: it is back in the list.`)
  } catch (err) {
    button.disabled = false
    events.told(`“${name}” was not restored. ${notRestored(err)}`)
  }
}

/** Why a restore was refused, in staff's words. */
export function notRestored (err: unknown): string {
  if (err instanceof ApiError && (err.status === 404 || err.status === 412)) return 'Someone restored or removed it meanwhile: reload the trash to see it as it is.'
  if (err instanceof ApiError && err.code === 'sku-taken') {
    const holder = err.problem?.holder
    return `Another plant${holder === undefined ? '' : ` (number ${holder})`} has its SKU now: change that plant’s SKU first.`
  }
  return describe(err)
}

async function removeForGood (entry: TrashEntry, li: HTMLLIElement, button: HTMLButtonElement): Promise<void> {
  const name = entry.plant.name
  const text = `“${name}” and its photos will be removed for good. This cannot be undone.`
  if (!await confirmFirst('Remove for good?', text, 'Remove for good')) {
    button.focus()
    return
  }
  button.disabled = true
  try {
    await api('DELETE', `/v3/trash/${entry.id}`)
    settle(entry, li, 'Removed', 'Removed for good')
    events.told(`Removed “${name}” for good.`)
  } catch (err) {
    button.disabled = false
    button.focus()
    if (err instanceof ApiError && err.status === 404) return events.told(`“${name}” is no longer in the trash: someone restored or removed it meanwhile.`)
    if (err instanceof ApiError && err.status === 403) return events.told(`“${name}” was not removed: only a manager’s key can remove plants for good.`)
    events.told(`“${name}” was not removed. ${describe(err)}`)
  }
}

function showFailure (text: string): void {
  say(failure, text)
  // Hidden while it has the focus, the button would drop it to the page: the trash's heading takes it.
  if (text === '' && document.activeElement === retry) byId('trash-title').focus()
  retry.hidden = text === ''
}

/** Loads the trash from its newest entry (`append`: the next page, below the rows shown). */
export async function loadTrash (append = false): Promise<void> {
  controller?.abort()
  const mine = new AbortController()
  controller = mine
  const params = new URLSearchParams({ limit: String(PAGE) })
  if (append && nextCursor !== null) params.set('cursor', nextCursor)
  list.setAttribute('aria-busy', 'true')
  const asOf = acted
  try {
    const { body } = await api<TrashPage>('GET', `/v3/trash?${params}`, { signal: mine.signal, key: true })
    if (mine.signal.aborted) return
    showFailure('')
    // Outcomes older than this answer are in it; newer ones are kept over it (entryRow shows them).
    for (const [id, outcome] of outcomes) if (outcome.at <= asOf) outcomes.delete(id)
    const rows = body.items.map(entryRow)
    sayWait(body.items[0])
    if (append) list.append(...rows)
    else list.replaceChildren(...rows)
    listed = (append ? listed : 0) + rows.length
    nextCursor = body.nextCursor
    more.hidden = nextCursor === null
    empty.hidden = listed !== 0
    summary.textContent = listed === 0 ? '' : `${listed}${nextCursor === null ? '' : '+'} deleted plant${listed === 1 ? '' : 's'}`
    // Shown more: focus goes to the first new row, where reading goes on.
    if (append) rows[0]?.querySelector<HTMLButtonElement>('button')?.focus()
  } catch (err) {
    if (isAbort(err)) return
    showFailure(err instanceof Cancelled
      ? 'Your staff key is needed to see the trash.'
      : `The trash could not be loaded. ${describe(err, 'The trash')}`)
  } finally {
    if (controller === mine) list.removeAttribute('aria-busy')
  }
}

export function setUpTrash (handlers: TrashEvents): void {
  events = handlers
  retry.addEventListener('click', () => { void loadTrash() })
  more.addEventListener('click', () => { void loadTrash(true) })
}
