import { api, ApiError, describe, isAbort, type Plant } from './api.js'
import { byId, debounce, el, say } from './dom.js'

// The plant list: search as you type, filters, sort, keyset paging. Every load aborts the one
// before it, so the latest answer always wins however the network orders them.

export const PAGE_SIZE = 20
export const STATUS_LABELS: Record<string, string> = { available: 'Available', pending: 'Pending', sold: 'Sold' }

interface ListEvents {
  open (id: number, opener: HTMLElement): void
  markSold (plant: Plant, button: HTMLButtonElement): void
  /** The first page loaded, with the feed position it reflects (null when the service gives none). */
  loaded (position: string | null): void
}

const q = byId<HTMLInputElement>('q')
const qHint = byId('q-hint')
const status = byId<HTMLSelectElement>('status')
const category = byId<HTMLInputElement>('category')
const tag = byId<HTMLInputElement>('tag')
const sort = byId<HTMLSelectElement>('sort')
const list = byId<HTMLUListElement>('plants')
const summary = byId('summary')
const listError = byId('list-error')
const prev = byId<HTMLButtonElement>('prev')
const next = byId<HTMLButtonElement>('next')
const pageNo = byId('page-no')
const pager = byId('pager')
const empty = byId('empty')
const emptyText = byId('empty-text')
const clear = byId<HTMLButtonElement>('clear-filters')

/** Cursors of the pages seen so far: cursors[i] loads page i + 1 (undefined: the first). */
let cursors: Array<string | undefined> = [undefined]
let page = 0
let nextCursor: string | null = null
let controller: AbortController | undefined
let events: ListEvents
/** A page was turned: once it shows, focus (and the view) go to the top of the list. */
let turned = false
/** The query the plants on screen answer ('' when none are shown): results of another must not stay beside a refusal. */
let shownFor = ''

/** Why the search box cannot be sent as it stands ('' when it can), said before the server has to. */
function searchProblem (text: string): string {
  if (text === '') return ''
  if (text.length > 100) return 'Search at most 100 characters.'
  const terms = text.split(/\s+/)
  if (terms.length > 5) return 'Search at most 5 words.'
  // Words of 1–2 letters are searched too, as the start of a word of the name.
  return ''
}

/** The query for the filters as they stand; 'refused' when it cannot be sent. */
function query (): URLSearchParams | 'refused' {
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) })
  const text = q.value.trim()
  const problem = searchProblem(text)
  say(qHint, problem)
  q.setAttribute('aria-invalid', String(problem !== ''))
  if (problem !== '') return 'refused'
  if (text !== '') params.set('q', text)
  // "For sale" is two statuses: the API takes status more than once for "any of these".
  for (const s of status.value.split(',').filter(Boolean)) params.append('status', s)
  if (category.value.trim() !== '') params.set('category', category.value.trim())
  for (const t of tag.value.split(',').map((s) => s.trim()).filter(Boolean)) params.append('tag', t)
  if (sort.value !== 'id') params.set('sort', sort.value)
  const cursor = cursors[page]
  if (cursor !== undefined) params.set('cursor', cursor)
  return params
}

/** Loads the current page again (after a filter change, a page turn or a change elsewhere). */
export async function load (): Promise<void> {
  const params = query()
  controller?.abort()
  if (params === 'refused') {
    // The hint says why; what an earlier search found ("No plant matches…") would contradict it.
    clearResults()
    say(listError, '')
    say(emptyText, 'Change the search above to see plants.')
    empty.hidden = false
    clear.hidden = false
    return
  }
  const mine = new AbortController()
  controller = mine
  list.setAttribute('aria-busy', 'true')
  try {
    const { body, position } = await api<{ items: Plant[], nextCursor: string | null }>('GET', `/v3/plant?${params}`, { signal: mine.signal })
    if (mine.signal.aborted) return
    say(listError, '')
    nextCursor = body.nextCursor
    render(body.items)
    shownFor = params.toString()
    if (turned) {
      turned = false
      // The button pressed may now be disabled: without this, focus falls to the page and the view stays at the bottom.
      byId('plants-title').focus()
    }
    // When the page first shows plants and takes input: the figure for "interactive" (User Timing).
    if (performance.getEntriesByName('plants-shown').length === 0) performance.mark('plants-shown')
    if (page === 0 && cursors.length === 1) events.loaded(position)
  } catch (err) {
    if (isAbort(err)) return
    // The same query failing again (a live refresh while offline) keeps its plants on screen; another
    // query's plants or "No plant matches" would pass for this one's answer.
    if (params.toString() !== shownFor) clearResults()
    say(listError, refusal(err))
  } finally {
    if (controller === mine) list.removeAttribute('aria-busy')
  }
}

/** Back to the first page (the filters changed, or the page starts over). */
export function restart (): void {
  cursors = [undefined]
  page = 0
  void load()
}

const FILTER_NAMES: Record<string, string> = { q: 'the search', category: 'the category', tag: 'the tag', status: 'the status', sort: 'the order' }

/** Why the list could not be loaded, in staff's words: a refused filter is named, with the rule it broke. */
function refusal (err: unknown): string {
  if (err instanceof ApiError && err.code === 'query-too-slow') {
    return 'This search would take the catalogue too long. Add letters to the search or choose another filter, then try again.'
  }
  if (err instanceof ApiError && err.status === 400) {
    for (const { path, message } of err.problem?.errors ?? []) {
      const filter = FILTER_NAMES[path.split('/')[1] ?? '']
      if (filter !== undefined) return `The catalogue cannot search for this: ${filter} ${message}.`
    }
  }
  return `The plants could not be loaded. ${describe(err, 'The list')}`
}

/** Nothing shown: no plants, no count, no "No plant matches", no pages. */
function clearResults (): void {
  shownFor = ''
  list.replaceChildren()
  summary.textContent = ''
  say(emptyText, '')
  empty.hidden = true
  pager.hidden = true
}

function render (plants: Plant[]): void {
  // A change arriving while someone works the list must not throw their focus away.
  const focused = document.activeElement instanceof HTMLElement && list.contains(document.activeElement)
    ? { id: document.activeElement.closest('li')?.dataset.id, role: document.activeElement.dataset.role }
    : undefined
  list.replaceChildren(...plants.map(row))
  if (focused !== undefined) {
    // A plant just marked sold has no "Mark sold" button any more: its name takes the focus, not the first plant's.
    const again = list.querySelector<HTMLElement>(`li[data-id="${focused.id}"] [data-role="${focused.role}"]`) ??
      list.querySelector<HTMLElement>(`li[data-id="${focused.id}"] [data-role="open"]`) ??
      list.querySelector<HTMLElement>('[data-role="open"]')
    again?.focus()
  }
  const filtered = q.value.trim() !== '' || status.value !== '' || category.value.trim() !== '' || tag.value.trim() !== ''
  const onePage = page === 0 && nextCursor === null
  const noun = (n: number): string => `${n} ${filtered ? 'matching ' : ''}plant${n === 1 ? '' : 's'}`
  summary.textContent = plants.length === 0
    ? ''
    : onePage ? noun(plants.length) : `Showing ${page * PAGE_SIZE + 1}–${page * PAGE_SIZE + plants.length}${filtered ? ' matching plants' : ''}`
  say(emptyText, plants.length === 0 ? (filtered ? 'No plant matches these filters.' : 'No plants yet. Add the first one.') : '')
  empty.hidden = plants.length !== 0
  clear.hidden = !filtered
  // One page only: the page buttons would both be disabled, so they are not shown.
  pager.hidden = onePage
  prev.disabled = page === 0
  next.disabled = nextCursor === null
  pageNo.textContent = `Page ${page + 1}`
}

function row (plant: Plant): HTMLLIElement {
  const cover = plant.photos?.[0]
  const thumb = cover !== undefined
    ? el('img', { class: 'thumb', attrs: { src: cover.urls.thumb, alt: '', width: '56', height: '56', loading: 'lazy', decoding: 'async' } })
    : el('span', { class: 'thumb thumb-empty', attrs: { 'aria-hidden': 'true' } })
  const open = el('button', { class: 'plant-name', text: plant.name, attrs: { type: 'button', 'data-role': 'open' } })
  open.addEventListener('click', () => events.open(plant.id, open))
  const meta = el('p', { class: 'plant-meta' })
  if (plant.category !== null) meta.append(el('span', { class: 'category', text: plant.category }))
  for (const t of plant.tags) meta.append(el('span', { class: 'tag', text: t }))
  const badge = el('span', { class: `status status-${plant.status}`, text: STATUS_LABELS[plant.status] ?? plant.status })
  const actions = el('div', { class: 'plant-actions' })
  if (plant.status !== 'sold') {
    // The visible words start the accessible name; the plant's name tells the buttons apart.
    const sold = el('button', { class: 'small', text: 'Mark sold', attrs: { type: 'button', 'data-role': 'sold', 'aria-label': `Mark sold: ${plant.name}` } })
    sold.addEventListener('click', () => events.markSold(plant, sold))
    actions.append(sold)
  }
  return el('li', { class: 'plant', attrs: { 'data-id': String(plant.id) } }, thumb, el('div', { class: 'plant-text' }, open, meta), badge, actions)
}

export function setUpList (handlers: ListEvents): void {
  events = handlers
  const searchSoon = debounce(restart, 250)
  q.addEventListener('input', searchSoon)
  category.addEventListener('input', searchSoon)
  tag.addEventListener('input', searchSoon)
  status.addEventListener('change', restart)
  sort.addEventListener('change', restart)
  byId('filters').addEventListener('submit', (event) => { event.preventDefault(); restart() })
  clear.addEventListener('click', () => {
    q.value = ''
    status.value = ''
    category.value = ''
    tag.value = ''
    restart()
    q.focus()
  })
  prev.addEventListener('click', () => {
    if (page === 0) return
    page -= 1
    turned = true
    void load()
  })
  next.addEventListener('click', () => {
    if (nextCursor === null) return
    cursors = cursors.slice(0, page + 1)
    cursors.push(nextCursor)
    page += 1
    turned = true
    void load()
  })
}
