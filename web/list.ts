import { listKey, readView, state, writeView, type View } from './address.js'
import { api, ApiError, isAbort, patiently, type Plant } from './api.js'
import { byId, eager, say, timing } from './dom.js'
import { appliedWords, filtering, setUpFilters, showClears, stockFilter, syncCards } from './filters.js'
import { currencyReady } from './money.js'
import { merge, note, row, setRowActions, type RowActions } from './rows.js'
import { BURST_MS, keyPressed, looksLikeCode, missedWords, scanned, type Missed } from './scanner.js'
import { refusal, searchProblem } from './search-words.js'

// The plant list: search as you type, filters, sort, keyset paging, how many match. Every load
// aborts the one before it, so the latest answer always wins however the network orders them.
// What is shown lives in the address (address.ts).

export const PAGE_SIZE = 20

interface ListEvents extends RowActions {
  /** The first page loaded, with the feed position it reflects (null when the service gives none). */
  loaded (position: string | null): void
}

const q = byId<HTMLInputElement>('q')
const qHint = byId('q-hint')
const status = byId<HTMLSelectElement>('status')
const category = byId<HTMLInputElement>('category')
const tag = byId<HTMLInputElement>('tag')
const stock = byId<HTMLSelectElement>('stock')
const sort = byId<HTMLSelectElement>('sort')
const list = byId<HTMLUListElement>('plants')
const summary = byId('summary')
const listError = byId('list-error')
const prev = byId<HTMLButtonElement>('prev')
const next = byId<HTMLButtonElement>('next')
const pageNo = byId('page-no')
const pager = byId('pager')
const skipPages = byId<HTMLAnchorElement>('skip-pages')
const empty = byId('empty')
const emptyText = byId('empty-text')
const retry = byId<HTMLButtonElement>('retry')
/** The last code scanned (or typed, then Enter) that opened no plant. */
let missed: Missed | undefined
/** The search box's text when Enter last looked it up and found no plant with that SKU or barcode. */
let lookedUp: string | undefined

/** Cursors of the pages seen so far: cursors[i] loads page i (null: the first page, or unknown after a link). */
let cursors: Array<string | null> = [null]
let page = 0
let nextCursor: string | null = null
let controller: AbortController | undefined
/**
 * A load from scratch is asked and its rows not yet shown: a change arriving meanwhile (which asks
 * to keep the rows on screen) aborts it, and must still load from scratch, or the rows of the query
 * before it would stay.
 */
let fromScratch = false
let events: ListEvents
/** A page was turned: once it shows, focus (and the view) go to the top of the list. */
let turned = false
/** The query the plants on screen answer ('' when none are shown): results of another must not stay beside a refusal. */
let shownFor = ''

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
  stockFilter(params)
  if (sort.value !== 'id') params.set('sort', sort.value)
  const cursor = cursors[page]
  if (page > 0 && cursor !== null && cursor !== undefined) params.set('cursor', cursor)
  return params
}

/** The list as the filters stand, for the address (the open plant is the editor's). */
export function currentView (): View {
  const cursor = cursors[page]
  return {
    q: q.value.trim(),
    status: status.value,
    category: category.value.trim(),
    tag: tag.value.trim(),
    stock: stock.value,
    sort: sort.value,
    page: page > 0 && cursor !== null && cursor !== undefined ? page : 0,
    after: page > 0 ? cursor ?? undefined : undefined,
    plant: readView().plant
  }
}

/** Puts `view` in the filters and the paging (a reload, Back or Forward, a link). */
export function showView (view: View): void {
  q.value = view.q
  status.value = [...status.options].some((o) => o.value === view.status) ? view.status : ''
  category.value = view.category
  tag.value = view.tag
  stock.value = [...stock.options].some((o) => o.value === view.stock) ? view.stock : ''
  sort.value = [...sort.options].some((o) => o.value === view.sort) ? view.sort : 'id'
  const known = state().cursors
  page = view.page
  cursors = known !== undefined && known.length === page + 1 && known[page] === (view.after ?? null)
    ? known
    : [...Array<null>(page).fill(null), view.after ?? null]
  cursors[0] = null
  syncCards()
}

/** The filters changed: back to the first page, as a new history entry (`push`) or in place of this one (typing). */
function changed (how: 'push' | 'replace'): void {
  cursors = [null]
  page = 0
  const view = currentView()
  if (listKey(view) !== listKey(readView())) writeView(view, how, { cursors })
  syncCards()
  void load()
}

/**
 * Loads the current page again: after a filter change or a page turn from scratch; after a change
 * (`keep`, made here or elsewhere) the rows on screen stay where they are, so the row under the
 * pointer is still the one staff aimed at, until the list is loaded again from scratch.
 */
export async function load (keep = false): Promise<void> {
  const params = query()
  controller?.abort()
  if (!keep) fromScratch = true
  keep &&= !fromScratch
  if (params === 'refused') {
    // The hint says why; what an earlier search found ("No plant matches…") would contradict it.
    clearResults()
    say(listError, '')
    say(emptyText, 'Change the search above to see plants.')
    empty.hidden = false
    showClears()
    return
  }
  const mine = new AbortController()
  controller = mine
  if (!keep) mark('list-asked', params)
  list.setAttribute('aria-busy', 'true')
  // The total is asked beside the page, and asked again while the catalogue is busy, until this
  // load is overtaken or its page fails (then the total is not wanted).
  const counted = new AbortController()
  mine.signal.addEventListener('abort', () => counted.abort(), { once: true })
  const counting = countOf(params, mine.signal, counted.signal)
  try {
    const [{ body, position }] = await Promise.all([
      api<{ items: Plant[], nextCursor: string | null }>('GET', `/v3/plant?${params}`, { signal: mine.signal }),
      currencyReady
    ])
    if (mine.signal.aborted) return
    // An empty answer while staff are still typing ("indoo" on the way to "indoor", a scanner's
    // first digit) waits for the typing to pause: the rows shown stay, rather than "No plant
    // matches" flashing and the page jumping at each key. A key pressed meanwhile aborts this load.
    const hold = !keep && body.items.length === 0 ? typedAt + timing('holdEmptyMs') - performance.now() : 0
    if (hold > 0) {
      await new Promise((resolve) => setTimeout(resolve, hold))
      if (mine.signal.aborted) return
    }
    showFailure('', false)
    nextCursor = body.nextCursor
    render(keep && params.toString() === shownFor ? merge(list, body.items) : body.items.map((p) => row(p, 'listed')))
    shownFor = params.toString()
    fromScratch = false
    summarise(body.items.length, undefined)
    if (!keep) mark('list-shown', params)
    // The address keeps the cursors met so far: Previous works after a reload too.
    writeView(currentView(), 'replace', { cursors })
    void counting.then((total) => {
      if (mine.signal.aborted || total === undefined) return
      summarise(body.items.length, total)
      if (!keep) mark('list-counted', params)
    })
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
    counted.abort()
    if (err instanceof ApiError && err.status === 400 && (err.problem?.errors ?? []).some((e) => e.path === '/cursor') && page > 0) {
      // A page's address from before the plants changed a lot, or edited by hand: start from the first page.
      restart()
      return
    }
    // The same query failing again (a live refresh while offline) keeps its plants on screen; another
    // query's plants or "No plant matches" would pass for this one's answer.
    if (params.toString() !== shownFor) clearResults()
    showFailure(refusal(err), !(err instanceof ApiError && err.status === 400))
  } finally {
    if (controller === mine) list.removeAttribute('aria-busy')
  }
}

/**
 * A User Timing mark of a load from scratch, naming its query (the last of each name only, so a
 * long day of filtering keeps no timeline): how long a filter change takes to answer on screen,
 * read by bench/page-filter.ts.
 */
function mark (name: 'list-asked' | 'list-shown' | 'list-counted', params: URLSearchParams): void {
  performance.clearMarks(name)
  performance.mark(name, { detail: params.toString() })
}

/** Back to the first page, loaded from scratch (the page starts over; the address follows). */
export function restart (): void {
  cursors = [null]
  page = 0
  void load()
}

/** Says why the list could not be loaded ('' when it could), with Retry when trying again may help. */
function showFailure (text: string, retryable: boolean): void {
  say(listError, text)
  retry.hidden = text === '' || !retryable
}

/**
 * How many plants the filters match (not the page), or undefined when the catalogue cannot say.
 * Asked again while the catalogue is busy (nothing else would ask for this total before the next
 * change), until `stop` aborts.
 */
async function countOf (params: URLSearchParams, signal: AbortSignal, stop: AbortSignal): Promise<{ count: number, exact: boolean } | undefined> {
  const filters = new URLSearchParams(params)
  for (const name of ['limit', 'cursor', 'sort']) filters.delete(name)
  try {
    return (await patiently(() => api<{ count: number, exact: boolean }>('GET', `/v3/plant/count?${filters}`, { signal }), stop)).body
  } catch {
    return undefined
  }
}

/** "1–20 of 240 plants", or "Showing 1–20" until the count is known. */
function summarise (listed: number, total: { count: number, exact: boolean } | undefined): void {
  const filtered = filtering()
  const onePage = page === 0 && nextCursor === null
  const plants = (n: number): string => `${filtered ? 'matching ' : ''}plant${n === 1 ? '' : 's'}`
  const from = page * PAGE_SIZE + 1
  const to = page * PAGE_SIZE + listed
  const of = total === undefined ? undefined : total.exact ? total.count.toLocaleString() : `more than ${total.count.toLocaleString()}`
  summary.textContent = listed === 0
    ? ''
    : onePage ? `${listed} ${plants(listed)}` : of !== undefined ? `${from}–${to} of ${of} ${plants(total!.count)}` : `Showing ${from}–${to}`
  const pages = total === undefined ? '' : ` of ${total.exact ? '' : 'more than '}${Math.max(1, Math.ceil(total.count / PAGE_SIZE)).toLocaleString()}`
  pageNo.textContent = `Page ${page + 1}${pages}`
}

/** Nothing shown: no plants, no count, no "No plant matches", no pages. */
function clearResults (): void {
  shownFor = ''
  list.replaceChildren()
  summary.textContent = ''
  say(emptyText, '')
  empty.hidden = true
  pager.hidden = true
  skipPages.hidden = true
}

/** A plant just added here shows at the top of the list, where staff are looking, until the list is loaded again. */
export function showAdded (plant: Plant): void {
  note(plant.id, plant)
  if (list.querySelector(`:scope > li[data-id="${plant.id}"]`) !== null) return
  list.prepend(row(plant, 'added'))
  empty.hidden = true
  say(emptyText, '')
}

function render (rows: HTMLLIElement[]): void {
  // A change arriving while someone works the list must not throw their focus away.
  const focused = document.activeElement instanceof HTMLElement && list.contains(document.activeElement)
    ? { id: document.activeElement.closest('li')?.dataset.id, role: document.activeElement.dataset.role }
    : undefined
  if (rows.length !== list.children.length || rows.some((li, i) => list.children[i] !== li)) list.replaceChildren(...rows)
  if (focused !== undefined) {
    // A plant just marked sold has no "Mark sold" button any more: its name takes the focus, not the first plant's.
    const again = list.querySelector<HTMLElement>(`li[data-id="${focused.id}"] [data-role="${focused.role}"]`) ??
      list.querySelector<HTMLElement>(`li[data-id="${focused.id}"] [data-role="open"]`) ??
      neighbour(rows.findIndex((li) => li.dataset.id === focused.id))
    again?.focus()
  }
  const filtered = filtering()
  const onePage = page === 0 && nextCursor === null
  const text = q.value.trim()
  const scan = missed !== undefined && text.endsWith(missed.code) ? missed : undefined
  say(emptyText, rows.length === 0
    ? scan !== undefined ? missedWords(scan) : filtered ? noMatch(text) : 'No plants yet. Add the first one.'
    : '')
  empty.hidden = rows.length !== 0
  showClears()
  // One page only: the page buttons would both be disabled, so they are not shown.
  pager.hidden = onePage
  skipPages.hidden = onePage
  prev.disabled = page === 0
  next.disabled = nextCursor === null
}

/**
 * Why nothing matches: the search is by name, so a SKU or barcode typed without Enter finds nothing
 * there, and staff are told how to look it up (or that Enter found no plant with it).
 */
function noMatch (text: string): string {
  if (!looksLikeCode(text)) return `No plant matches: ${appliedWords()}.`
  if (lookedUp === text) return `No plant has the SKU or barcode “${text}”, and no plant’s name matches it.`
  return 'No plant’s name matches. Press Enter to look up this SKU or barcode.'
}

/**
 * The name of the plant nearest row `at` (one just deleted has no button left): the next one, else
 * the one before; staff working down the list carry on where they were, not at its top.
 */
function neighbour (at: number): HTMLElement | null {
  const names = [...list.querySelectorAll<HTMLElement>(':scope > li [data-role="open"]')]
  if (at < 0) return names[0] ?? null
  const rowOf = (name: HTMLElement): number => [...list.children].indexOf(name.closest('li')!)
  return names.find((name) => rowOf(name) > at) ?? names.reverse().find((name) => rowOf(name) < at) ?? null
}

const searchSoon = eager(() => changed('replace'), BURST_MS)
/** When a key last changed the search, category or tag box (performance clock). */
let typedAt = -Infinity
function typed (): void {
  typedAt = performance.now()
  searchSoon()
}

/**
 * A key typed with the focus on a row's button, a link or the page (a scanner fired after "Mark
 * sold", say) goes to the search box: a scanner's Enter would otherwise press the focused button
 * and sell or open the wrong plant. Space and keys with modifiers keep their own meaning.
 */
function typeIntoSearch (event: KeyboardEvent): void {
  if (event.key.length !== 1 || event.key === ' ' || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return
  const at = event.target
  if (at instanceof HTMLInputElement || at instanceof HTMLTextAreaElement || at instanceof HTMLSelectElement || (at instanceof HTMLElement && at.isContentEditable)) return
  if (document.querySelector('dialog[open]') !== null || q.offsetParent === null) return
  // Focused during the keydown, the box receives this key's character itself, after what it holds.
  q.focus()
  q.setSelectionRange(q.value.length, q.value.length)
}

export function setUpList (handlers: ListEvents): void {
  events = handlers
  setRowActions(handlers)
  showView(readView())
  for (const box of [q, category, tag]) box.addEventListener('input', typed)
  document.addEventListener('keydown', typeIntoSearch)
  q.addEventListener('keydown', (event) => {
    // Selected text (a scan that opened nothing) is replaced by the key: the box holds what is left.
    keyPressed(event, q.value.slice(0, q.selectionStart ?? q.value.length) + q.value.slice(q.selectionEnd ?? q.value.length))
    // Enter: a scanned code first, else search now. (The form has no submit button: Enter does not submit it.)
    if (event.key !== 'Enter') return
    searchSoon.cancel()
    const text = q.value.trim()
    void scanned(text).then((found) => {
      if (found === undefined || 'missed' in found) {
        // Digits scanned that open no plant: said why, rather than "no plant matches these filters".
        missed = found?.missed
        lookedUp = text
        // The code that opened nothing is selected: the next scan replaces it rather than being added after it.
        if (missed !== undefined && q.value.trim() === text && document.activeElement === q) {
          const at = q.value.lastIndexOf(missed.code)
          if (at >= 0) q.setSelectionRange(at, at + missed.code.length)
        }
        return changed('replace')
      }
      // The box and the list go back to the search they held before the code, ready for the next scan.
      q.value = found.before
      searchSoon.cancel()
      say(qHint, '')
      changed('replace')
      events.open(found.plant.id, q)
    })
  })
  setUpFilters(changed, () => searchSoon.cancel())
  retry.addEventListener('click', () => {
    // Hidden while it has the focus, the button would drop it to the page: the list's heading takes
    // it, above where the plants (or the error again, with Retry) show.
    byId('plants-title').focus()
    retry.hidden = true
    void load()
  })
  // The page buttons take the focus themselves: following #pager would add an entry to the history.
  skipPages.addEventListener('click', (event) => {
    event.preventDefault()
    ;(next.disabled ? prev : next).focus()
  })
  prev.addEventListener('click', () => {
    if (page === 0) return
    // A page reached by a link does not know the cursor of the one before: the first page it is.
    page = cursors[page - 1] === null ? 0 : page - 1
    if (page === 0) cursors = [null]
    turned = true
    writeView(currentView(), 'push', { cursors })
    void load()
  })
  next.addEventListener('click', () => {
    if (nextCursor === null) return
    cursors = cursors.slice(0, page + 1)
    cursors.push(nextCursor)
    page += 1
    turned = true
    writeView(currentView(), 'push', { cursors })
    void load()
  })
}
