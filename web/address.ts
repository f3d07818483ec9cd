// The page's address holds what staff are looking at: the view (the plants, the trash or the
// settings, `?view=trash`), and for the plants the search, the filters, the sort, the page
// and the open plant. Reload, Back and Forward, and a link to one plant all work from it. The
// cursors of the pages before the one shown are kept in the history entry's state (a link has
// none: Previous from a linked page goes back to the first page).

export interface View {
  q: string
  status: string
  category: string
  tag: string
  /** The stock filter: '', `low`, `in` or `out`. */
  stock: string
  sort: string
  /** 0 for the first page. */
  page: number
  /** The cursor that loads `page` (absent on the first page). */
  after?: string
  /** The plant open in the editor. */
  plant?: number
}

interface State {
  /** cursors[i] loads page i; null where unknown (the page was reached by a link). */
  cursors?: Array<string | null>
  /** This entry was added by opening a plant: closing it goes back rather than adding another. */
  opened?: boolean
}

/** The page's views: the plants (the list and its editor), the trash, the settings. */
export type Section = 'list' | 'trash' | 'settings'

/** The view the address names (the plants when it names none). */
export function readSection (): Section {
  const view = new URLSearchParams(location.search).get('view')
  return view === 'trash' || view === 'settings' ? view : 'list'
}

/** The address of a view other than the plants. */
export const sectionAddress = (section: Exclude<Section, 'list'>): string => `${location.pathname}?view=${section}`

/** A plant's own address: the page with that plant open over the plain list (a link, a new tab). */
export const plantAddress = (id: number): string => `${location.pathname}?plant=${id}`

export function readView (): View {
  const p = new URLSearchParams(location.search)
  const page = Math.max(1, Math.floor(Number(p.get('page') ?? '1')) || 1) - 1
  const plant = Number(p.get('plant'))
  return {
    q: p.get('q') ?? '',
    status: p.get('status') ?? '',
    category: p.get('category') ?? '',
    tag: p.get('tag') ?? '',
    stock: p.get('stock') ?? '',
    sort: p.get('sort') ?? 'id',
    page: page > 0 && p.has('after') ? page : 0,
    after: page > 0 ? p.get('after') ?? undefined : undefined,
    plant: Number.isSafeInteger(plant) && plant > 0 ? plant : undefined
  }
}

export function state (): State {
  return (history.state ?? {}) as State
}

/** The address of `view`: only what differs from the defaults, so the plain list is just `/`. */
function addressOf (view: View): string {
  const p = new URLSearchParams()
  for (const key of ['q', 'status', 'category', 'tag', 'stock'] as const) if (view[key] !== '') p.set(key, view[key])
  if (view.sort !== 'id') p.set('sort', view.sort)
  if (view.page > 0 && view.after !== undefined) {
    p.set('page', String(view.page + 1))
    p.set('after', view.after)
  }
  if (view.plant !== undefined) p.set('plant', String(view.plant))
  const query = p.toString()
  return query === '' ? location.pathname : `${location.pathname}?${query}`
}

/** What the list shows, apart from the open plant: two views with the same key show the same list. */
export const listKey = (view: View): string => addressOf({ ...view, plant: undefined })

/** Records `view`: a new history entry (`push`), or in place of the current one (typing, a load's cursors). */
export function writeView (view: View, how: 'push' | 'replace', extra: State = {}): void {
  // The list keeps itself current while another view shows (a change from the feed): the address stays that view's.
  if (readSection() !== 'list') return
  const url = addressOf(view)
  const next: State = how === 'push' ? extra : { ...state(), ...extra }
  if (how === 'push') history.pushState(next, '', url)
  else history.replaceState(next, '', url)
}
