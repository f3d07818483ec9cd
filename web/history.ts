import { api, describe, isAbort } from './api.js'
import { byId, el, say } from './dom.js'
import { changeLines, headline, type HistoryEntry } from './history-words.js'

// A plant's versions on screen, newest first, a page at a time ("Show older"): who changed what,
// and when. The editor's History part (history-editor.ts) and the trash's read-only view share it.

interface HistoryPage { items: HistoryEntry[], nextCursor: string | null }

/** The versions a page asks for; a reload after a change asks for those shown and the new one, up to the service's most. */
const PAGE = 10
const MOST = 100

export interface ListParts {
  list: HTMLOListElement
  more: HTMLButtonElement
  empty: HTMLElement
  failure: HTMLElement
  retry: HTMLButtonElement
}

/** What a version's row offers besides its words (the editor: "Go back to this version"); `describedBy` is its line's id. */
export type VersionActions = (entry: HistoryEntry, describedBy: string) => HTMLElement[]

export class VersionList {
  /** The versions shown, newest first, none missing between. */
  entries: HistoryEntry[] = []
  private cursor: string | null = null
  private id: number | undefined
  private controller: AbortController | undefined

  constructor (private readonly parts: ListParts, private readonly actions: VersionActions = () => []) {
    parts.more.addEventListener('click', () => { if (this.id !== undefined) void this.load(this.id, 'older') })
    parts.retry.addEventListener('click', () => { if (this.id !== undefined) void this.load(this.id, 'first') })
  }

  /** Shows nothing, and forgets any load under way (another plant is shown). */
  clear (): void {
    this.controller?.abort()
    this.entries = []
    this.cursor = null
    this.id = undefined
    this.parts.list.replaceChildren()
    this.parts.more.hidden = true
    this.parts.empty.hidden = true
    this.showFailure('')
  }

  /**
   * Loads plant `id`'s versions: `first`, the newest page; `older`, the page below those shown;
   * `again`, from the newest as many as are shown (a change came in). False when it did not load.
   */
  async load (id: number, how: 'first' | 'older' | 'again'): Promise<boolean> {
    this.controller?.abort()
    const mine = new AbortController()
    this.controller = mine
    this.id = id
    const older = how === 'older' && this.cursor !== null
    const limit = how === 'again' ? Math.min(MOST, Math.max(PAGE, this.entries.length + 1)) : PAGE
    const params = new URLSearchParams({ limit: String(limit) })
    if (older) params.set('cursor', this.cursor!)
    this.parts.list.setAttribute('aria-busy', 'true')
    try {
      const { body } = await api<HistoryPage>('GET', `/v3/plant/${id}/history?${params}`, { signal: mine.signal })
      if (mine.signal.aborted) return false
      const shown = this.entries.length
      this.entries = older ? [...this.entries, ...body.items] : body.items
      this.cursor = body.nextCursor
      this.showFailure('')
      this.render()
      // Shown more: reading goes on at the first version added.
      if (older) this.parts.list.children[shown]?.querySelector<HTMLElement>('[data-role="line"]')?.focus()
      return true
    } catch (err) {
      if (isAbort(err)) return false
      this.showFailure(`The history could not be loaded. ${describe(err)}`)
      return false
    } finally {
      if (this.controller === mine) this.parts.list.removeAttribute('aria-busy')
    }
  }

  /** Draws the versions again (the plant they are compared with changed); focus stays where it was. */
  render (): void {
    const { list, more, empty } = this.parts
    const active = document.activeElement
    const held = active instanceof HTMLElement && list.contains(active)
      ? { version: active.closest<HTMLElement>('li.version')?.dataset.version, role: active.dataset.role }
      : undefined
    list.replaceChildren(...this.entries.map((entry) => this.row(entry)))
    more.hidden = this.cursor === null
    empty.hidden = this.entries.length !== 0
    if (held?.version === undefined) return
    const row = list.querySelector(`li[data-version="${held.version}"]`)
    ;(row?.querySelector<HTMLElement>(`[data-role="${held.role}"]`) ?? row?.querySelector<HTMLElement>('[data-role="line"]'))?.focus()
  }

  private row (entry: HistoryEntry): HTMLLIElement {
    const id = `${this.parts.list.id}-${entry.version}`
    const line = el('p', { class: 'version-line', text: headline(entry), attrs: { id, tabindex: '-1', 'data-role': 'line' } })
    const li = el('li', { class: 'version', attrs: { 'data-version': String(entry.version) } }, line)
    const lines = changeLines(entry)
    if (lines.length > 0) li.append(el('ul', { class: 'version-changes' }, ...lines.map((text) => el('li', { text }))))
    const actions = this.actions(entry, id)
    if (actions.length > 0) li.append(el('div', { class: 'version-actions' }, ...actions))
    return li
  }

  private showFailure (text: string): void {
    say(this.parts.failure, text)
    this.parts.retry.hidden = text === ''
  }
}

/** The parts of a version list whose elements are `<prefix>-list`, `-more`, `-empty`, `-error` and `-retry` in index.html. */
export function listParts (prefix: string): ListParts {
  return {
    list: byId<HTMLOListElement>(`${prefix}-list`),
    more: byId<HTMLButtonElement>(`${prefix}-more`),
    empty: byId(`${prefix}-empty`),
    failure: byId(`${prefix}-error`),
    retry: byId<HTMLButtonElement>(`${prefix}-retry`)
  }
}
