import { byId, debounce, timing } from './dom.js'

// The list's filter controls besides the search box: the status and sort selects, the count cards
// (a card is a status filter), Clear filters, and the button that folds the filters on a phone.
// The list (list.ts) reads their values; here they tell it when a choice is made.

const q = byId<HTMLInputElement>('q')
const status = byId<HTMLSelectElement>('status')
const category = byId<HTMLInputElement>('category')
const tag = byId<HTMLInputElement>('tag')
const stock = byId<HTMLSelectElement>('stock')
const sort = byId<HTMLSelectElement>('sort')
const clear = byId<HTMLButtonElement>('clear-filters')
const clearSearch = byId<HTMLButtonElement>('clear-search')
const toggle = byId<HTMLButtonElement>('filters-toggle')
const cards = [...document.querySelectorAll<HTMLButtonElement>('#counts [data-status]')]

/** The count cards show which status the list is filtered by. */
export function syncCards (): void {
  for (const card of cards) card.setAttribute('aria-pressed', String(status.value === card.dataset.status))
  // Folded on a phone, the filters button says how many filters are on.
  const on = [status.value, category.value.trim(), tag.value.trim(), stock.value, sort.value === 'id' ? '' : sort.value].filter(Boolean).length
  toggle.textContent = on === 0 ? 'Filters' : `Filters (${on})`
}

/** A filter narrows the list (the sort alone does not). */
export const filtering = (): boolean => q.value.trim() !== '' || status.value !== '' || category.value.trim() !== '' || tag.value.trim() !== '' || stock.value !== ''

/** The filters besides the search, in staff's words: "status sold, category fern, in stock". */
function filterWords (): string[] {
  const chosen = (select: HTMLSelectElement): string => select.value === '' ? '' : select.selectedOptions[0]!.text.toLowerCase()
  return [chosen(status) && `status ${chosen(status)}`, category.value.trim() && `category ${category.value.trim()}`,
    tag.value.trim() && `tag ${tag.value.trim()}`, chosen(stock)].filter(Boolean)
}

/** What the list is narrowed by, named: "search “fern”, category indoor, low stock". */
export const appliedWords = (): string => [q.value.trim() && `search “${q.value.trim()}”`, ...filterWords()].filter(Boolean).join(', ')

/** Each way back to more plants is offered for what it clears: the filters (the search stays), the search. */
export function showClears (): void {
  clear.hidden = filterWords().length === 0
  clearSearch.hidden = q.value.trim() === ''
}

/** The stock filter's query: low stock, in stock (some available) or out of stock. */
export function stockFilter (params: URLSearchParams): void {
  if (stock.value === 'low') params.set('lowStock', 'true')
  if (stock.value === 'in' || stock.value === 'out') params.set('inStock', String(stock.value === 'in'))
}

/** `changed` loads the list for the filters as they are now (a new history entry or not); `cancelSearch` drops a search typed but not yet sent. */
export function setUpFilters (changed: (how: 'push' | 'replace') => void, cancelSearch: () => void): void {
  // A closed select changes at each arrow key: the list follows once the choice settles, not at each press.
  const settled = debounce(() => changed('push'), timing('settleMs'))
  let keyed = false
  for (const select of [status, stock, sort]) {
    select.addEventListener('change', () => {
      syncCards()
      settled()
      // Chosen with the pointer or in the open list of options: at once.
      if (!keyed) settled.flush()
      keyed = false
    })
    select.addEventListener('keydown', (event) => {
      keyed = event.key.startsWith('Arrow') || ['Home', 'End', 'PageUp', 'PageDown'].includes(event.key) || event.key.length === 1
      if (event.key === 'Enter') settled.flush()
    })
    select.addEventListener('blur', () => settled.flush())
  }
  byId('filters').addEventListener('submit', (event) => {
    event.preventDefault()
    cancelSearch()
    changed('replace')
  })
  for (const card of cards) {
    card.addEventListener('click', () => {
      status.value = status.value === card.dataset.status ? '' : card.dataset.status ?? ''
      settled.cancel()
      changed('push')
    })
  }
  clear.addEventListener('click', () => {
    status.value = ''
    category.value = ''
    tag.value = ''
    stock.value = ''
    syncCards()
    changed('push')
    q.focus()
  })
  clearSearch.addEventListener('click', () => {
    q.value = ''
    changed('push')
    q.focus()
  })
  toggle.addEventListener('click', () => {
    toggle.setAttribute('aria-expanded', String(toggle.getAttribute('aria-expanded') !== 'true'))
  })
  for (const input of [category, tag]) input.addEventListener('input', syncCards)
}
