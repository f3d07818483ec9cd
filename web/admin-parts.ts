import { api, ApiError, Cancelled, describe, isAbort } from './api.js'
import { el, say } from './dom.js'

// What the manager's parts of the settings share: times in the browser's language, form fields
// with their hint and error, a secret shown this once with a Copy button, and the panel that says
// a manager's key is needed. Loaded with them, when the settings are first opened.

const when = new Intl.DateTimeFormat(navigator.language, { dateStyle: 'medium', timeStyle: 'short' })
const exact = new Intl.DateTimeFormat(navigator.language, { dateStyle: 'medium', timeStyle: 'medium' })
const day = new Intl.DateTimeFormat(navigator.language, { dateStyle: 'medium', timeZone: 'UTC' })

/** "26 Nov 2026, 17:20" in the browser's language and time zone. */
export const at = (iso: string): string => when.format(new Date(iso))

/** The same to the second, for attempts a few seconds apart. */
export const atSeconds = (iso: string): string => exact.format(new Date(iso))

/** A calendar day kept as midnight UTC ("works through 31 Jan": expires at 1 Feb, 00:00 UTC), named in the browser's language. */
export const dayBefore = (iso: string): string => day.format(new Date(Date.parse(iso) - 86_400_000))

export const isMidnightUtc = (iso: string): boolean => /T00:00:00(\.000)?Z$/.test(iso)

let made = 0
/** An id of its own for an element made here (labels and descriptions point at it). */
export const newId = (prefix: string): string => `${prefix}-${++made}`

export interface Field {
  wrap: HTMLElement
  input: HTMLInputElement
  /** Shows `text` under the field and marks it invalid ('' clears both). */
  error (text: string): void
}

/** An input with its label, an optional hint and its error line, tied together for screen readers. */
export function field (label: string, attrs: Record<string, string>, hint?: string): Field {
  const id = newId('admin-field')
  const input = el('input', { attrs: { id, autocomplete: 'off', spellcheck: 'false', ...attrs } })
  const errorLine = el('p', { class: 'field-error', attrs: { id: `${id}-error` } })
  errorLine.hidden = true
  const hintLine = hint === undefined ? undefined : el('p', { class: 'hint', attrs: { id: `${id}-hint` }, text: hint })
  input.setAttribute('aria-describedby', [hintLine?.id, errorLine.id].filter(Boolean).join(' '))
  const wrap = el('div', { class: 'field' }, el('label', { attrs: { for: id }, text: label }), input)
  if (hintLine !== undefined) wrap.append(hintLine)
  wrap.append(errorLine)
  return {
    wrap,
    input,
    error: (text) => {
      say(errorLine, text)
      if (text === '') input.removeAttribute('aria-invalid')
      else input.setAttribute('aria-invalid', 'true')
    }
  }
}

/** A group of checkboxes or radio buttons under one legend, each with an optional hint, and the group's error line. */
export function choices (legend: string, type: 'radio' | 'checkbox', options: Array<{ value: string, label: string, hint?: string, checked?: boolean }>): {
  wrap: HTMLFieldSetElement, inputs: HTMLInputElement[], error (text: string): void
} {
  const name = newId('admin-choice')
  const errorLine = el('p', { class: 'field-error', attrs: { id: `${name}-error` } })
  errorLine.hidden = true
  const inputs: HTMLInputElement[] = []
  const rows = options.map((option) => {
    const id = `${name}-${option.value}`
    const input = el('input', { attrs: { type, id, name, value: option.value } })
    // The default too, so that a form reset after a save checks it again.
    input.defaultChecked = option.checked === true
    input.checked = option.checked === true
    inputs.push(input)
    const label = el('label', { attrs: { for: id } }, el('span', { class: 'choice-label', text: option.label }))
    if (option.hint !== undefined) {
      label.append(el('span', { class: 'hint', text: option.hint }))
    }
    return el('div', { class: 'choice' }, input, label)
  })
  const wrap = el('fieldset', { class: 'choices', attrs: { 'aria-describedby': errorLine.id } }, el('legend', { text: legend }), ...rows, errorLine)
  return {
    wrap,
    inputs,
    error: (text) => {
      say(errorLine, text)
      // aria-invalid belongs to each input, not to the group around them.
      for (const input of inputs) {
        if (text === '') input.removeAttribute('aria-invalid')
        else input.setAttribute('aria-invalid', 'true')
      }
      wrap.classList.toggle('invalid', text !== '')
    }
  }
}

/**
 * A secret shown this once: in a read-only box (selectable), with Copy and a plain warning that it
 * is not shown again. `done` runs when staff say they have it (the box is gone by then). Focus goes
 * to the secret, whose label and warning a screen reader reads with it.
 */
export function shownOnce (title: string, secret: string, warning: string, done: () => void): HTMLElement {
  const id = newId('secret')
  const box = el('input', { class: 'secret', attrs: { id, type: 'text', readonly: '', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': `${id}-warning` } })
  box.value = secret
  const copied = el('p', { class: 'hint', attrs: { role: 'status' } })
  copied.hidden = true
  const copy = el('button', { class: 'primary', text: 'Copy', attrs: { type: 'button' } })
  const finished = el('button', { text: 'I have copied it', attrs: { type: 'button' } })
  const part = el('div', { class: 'once' },
    el('label', { attrs: { for: id }, text: title }),
    el('p', { class: 'once-warning', attrs: { id: `${id}-warning` }, text: warning }),
    box,
    el('div', { class: 'panel-actions' }, copy, finished),
    copied)
  copy.addEventListener('click', () => {
    box.select()
    // Copying may be refused (an older browser, a permission): the secret is then selected for Ctrl+C.
    const wrote = navigator.clipboard?.writeText(secret) ?? Promise.reject(new Error('no clipboard'))
    wrote.then(() => say(copied, 'Copied. Paste it where it is needed now.'),
      () => {
        box.focus()
        box.select()
        say(copied, 'This browser did not let the page copy it: it is selected, so press Ctrl+C (⌘C on a Mac) to copy it.')
      })
  })
  finished.addEventListener('click', () => {
    box.value = ''
    part.remove()
    done()
  })
  window.setTimeout(() => {
    box.focus()
    box.select()
  }, 0)
  return part
}

/**
 * Runs `act` for `button` unless it is running already. The button stays focusable while it runs
 * (a disabled one drops the focus to the page) and says it is busy through aria-disabled.
 */
export async function once (button: HTMLButtonElement, act: () => Promise<void>): Promise<void> {
  if (button.getAttribute('aria-disabled') === 'true') return
  button.setAttribute('aria-disabled', 'true')
  try {
    await act()
  } finally {
    button.removeAttribute('aria-disabled')
  }
}

/** Why this tab cannot manage: it holds no key (or one refused), or one that is not a manager's. */
export type Refusal = 'none' | 'lower'

/** The refusal an error means, if it is one (no key given, a key refused, a key of lower scope). */
export function refusalOf (err: unknown): Refusal | undefined {
  if (err instanceof Cancelled || (err instanceof ApiError && err.status === 401)) return 'none'
  if (err instanceof ApiError && err.status === 403) return 'lower'
  return undefined
}

/** One of the manager's parts of the settings (the keys, the connected systems). */
export interface Part {
  root: HTMLElement
  /** Reads what it shows and shows it; a refusal or failure is thrown to the caller. */
  load (): Promise<void>
  /** Says a manager's key is needed, and why, with a button to give one. */
  needed (refusal: Refusal): void
  /** Says it could not be loaded, with Try again. */
  failed (err: unknown): void
  /** Forgets any secret on show: the settings were opened again. */
  forget (): void
}

/** Shows what a failed load means on `part`: a manager's key needed, or the failure (an abort is no failure: a newer load runs). */
export function showRefusal (part: Pick<Part, 'needed' | 'failed'>, err: unknown): void {
  if (isAbort(err)) return
  const refusal = refusalOf(err)
  if (refusal !== undefined) part.needed(refusal)
  else part.failed(err)
}

/** What a part says when a manager's key is needed, with a button to give one. */
export function neededNotice (what: string, refusal: Refusal, give: () => void): HTMLElement {
  const why = refusal === 'none'
    ? 'This tab holds no staff key.'
    : 'The key this tab holds is not a manager’s key: it may not do this.'
  const button = el('button', { text: 'Give a manager’s key', attrs: { type: 'button' } })
  button.addEventListener('click', give)
  return el('div', { class: 'needed' },
    el('p', { class: 'needed-text', text: `A manager’s key is needed to see and change ${what}.` }),
    el('p', { class: 'hint', text: `${why} Ask your manager, or give a manager’s key for this tab.` }),
    el('div', { class: 'panel-actions' }, button))
}

/** What a part shows its list in, and how it reads it. */
export interface ListedPart<T> {
  /** The part's body: its content once read, or what stops it (a key needed, a failure). */
  body: HTMLElement
  content: HTMLElement
  list: HTMLElement
  /** Shown when the list has no rows. */
  empty: HTMLElement
  /** What the list is, as a sentence names it ("the keys"). */
  what: string
  path: string
  rows: (items: T[]) => HTMLElement[]
  give: () => void
  retry: () => void
}

/**
 * A part's load, needed and failed over its list: each load aborts the one before it (the newest
 * answer is the one shown), and the list is marked busy while it is read.
 */
export function listLoader<T> (part: ListedPart<T>): Pick<Part, 'load' | 'needed' | 'failed'> {
  const { body, content, list, empty, what } = part
  let controller: AbortController | undefined
  async function load (): Promise<void> {
    controller?.abort()
    const mine = new AbortController()
    controller = mine
    if (body.firstChild !== content) body.replaceChildren(content)
    list.setAttribute('aria-busy', 'true')
    try {
      const { body: answer } = await api<{ items: T[] }>('GET', part.path, { key: true, signal: mine.signal })
      if (mine.signal.aborted) return
      const rows = part.rows(answer.items)
      list.replaceChildren(...rows)
      empty.hidden = rows.length !== 0
    } finally {
      if (controller === mine) list.removeAttribute('aria-busy')
    }
  }
  function needed (refusal: Refusal): void {
    controller?.abort()
    body.replaceChildren(neededNotice(what, refusal, part.give))
  }
  function failed (err: unknown): void {
    const again = el('button', { text: 'Try again', attrs: { type: 'button' } })
    again.addEventListener('click', part.retry)
    const sentence = `${what.charAt(0).toUpperCase()}${what.slice(1)} could not be loaded. ${describe(err, 'The list')}`
    body.replaceChildren(el('p', { class: 'alert', attrs: { role: 'alert' }, text: sentence }), again)
  }
  return { load, needed, failed }
}
