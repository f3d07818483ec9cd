import { api, ApiError, describe } from './api.js'
import { confirmFirst, el, say } from './dom.js'
import { at, atSeconds, choices, field, listLoader, newId, once, refusalOf, shownOnce, showRefusal, type Part } from './admin-parts.js'
import { addressProblem, KINDS, outcome, outcomeInSentence, STOCK_KINDS, toldOf, type Kind, type StockKind } from './admin-outcome.js'
import { tell } from './toast.js'

// The store's other systems told of every change (/v3/webhooks): where each is, what it is told
// about and how it is doing (a failing one said plainly, since when and why), added with a
// secret shown this once, paused and resumed, sent a test, its recent deliveries, removed after
// a question.

interface Hook {
  id: number
  url: string
  events: Array<Kind | StockKind>
  status: 'active' | 'paused' | 'failing'
  createdAt: string
  attempts: number
  nextAttemptAt: string | null
  failingSince: string | null
  lastError: string | null
}
interface Delivery { seq: number, attempt: number, at: string, statusCode: number | null, error: string | null }

const STATUS_LABELS: Record<Hook['status'], string> = { active: 'Active', paused: 'Paused', failing: 'Failing' }
/** The latest attempts shown under a system (the service keeps up to 100). */
const SHOWN_DELIVERIES = 20

/** How it stands, when that needs saying: failing, paused, or trying again after a failed attempt. */
function standing (hook: Hook): string {
  const why = outcomeInSentence({ statusCode: null, error: hook.lastError })
  const since = hook.failingSince === null ? '' : ` since ${at(hook.failingSince)}`
  if (hook.status === 'failing') return `Failing${since}: ${why}. Nothing more is sent until it is resumed; it then gets every change it missed, oldest first.`
  if (hook.status === 'paused') return 'Paused: nothing is sent until it is resumed; it then gets every change it missed, oldest first.'
  if (hook.attempts === 0) return ''
  const next = hook.nextAttemptAt === null ? 'soon' : `at ${at(hook.nextAttemptAt)}`
  return `Not reached${since} (${hook.attempts === 1 ? '1 try' : `${hook.attempts} tries`}): ${why}. Trying again ${next}.`
}

export function systemsPart (give: () => void, retry: () => void): Part {
  const titleId = newId('systems-title')
  const title = el('h3', { attrs: { id: titleId, tabindex: '-1' }, text: 'Connected systems' })
  const root = el('section', { class: 'panel', attrs: { 'aria-labelledby': titleId, 'data-part': 'systems' } }, title)
  const body = el('div', { class: 'panel-body' })
  root.append(body)

  const secretSlot = el('div')
  const list = el('ul', { class: 'admin-list', attrs: { 'aria-label': 'Connected systems' } })
  const empty = el('p', { text: 'No other system is told of changes yet.' })
  empty.hidden = true
  const add = el('button', { text: 'Add system', attrs: { type: 'button', 'aria-expanded': 'false' } })
  const again = el('button', { class: 'quiet', text: 'Check again', attrs: { type: 'button' } })
  const form = el('form', { class: 'admin-form', attrs: { novalidate: '', 'aria-label': 'Add system' } })
  form.id = newId('add-system')
  form.hidden = true
  add.setAttribute('aria-controls', form.id)
  const content = el('div', { class: 'panel-body' },
    el('p', { class: 'hint', text: 'The store’s other systems (its website, accounting, a marketplace) can be told of every change to the plants, at an address each gives. Each message is signed with a secret the system is given, so it knows the message comes from this catalogue.' }),
    secretSlot, list, empty, el('div', { class: 'panel-actions' }, add, again), form)

  const address = field('Address', { type: 'url', maxlength: '2048', inputmode: 'url' }, 'Where the system takes changes, as its makers gave it: starting with https://')
  const kinds = choices('Tell it when plants are', 'checkbox', KINDS.map((k) => ({ ...k, checked: true })))
  const stockKinds = choices('Tell it when a plant’s stock', 'checkbox', STOCK_KINDS)
  const failure = el('p', { class: 'alert', attrs: { role: 'alert' } })
  failure.hidden = true
  const save = el('button', { class: 'primary', text: 'Connect', attrs: { type: 'submit' } })
  const cancel = el('button', { text: 'Cancel', attrs: { type: 'button' } })
  form.append(failure, address.wrap, kinds.wrap, stockKinds.wrap, el('div', { class: 'panel-actions' }, save, cancel))

  function openForm (open: boolean): void {
    form.hidden = !open
    add.setAttribute('aria-expanded', String(open))
    if (open) address.input.focus()
  }
  function clearForm (): void {
    form.reset()
    address.error('')
    kinds.error('')
    stockKinds.error('')
    say(failure, '')
  }
  add.addEventListener('click', () => {
    secretSlot.replaceChildren()
    openForm(form.hidden)
  })
  cancel.addEventListener('click', () => {
    clearForm()
    openForm(false)
    add.focus()
  })
  again.addEventListener('click', () => { void refresh() })
  // A kind chosen after "Choose at least one" answers it, in either group.
  for (const input of [...kinds.inputs, ...stockKinds.inputs]) {
    input.addEventListener('change', () => { if (input.checked) kinds.error('') })
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void once(save, addSystem)
  })

  function checked (): boolean {
    const given = address.input.value.trim()
    let url: URL | undefined
    try { url = new URL(given) } catch { url = undefined }
    address.error(given === ''
      ? 'Enter the address the system takes changes at.'
      : url === undefined || !['http:', 'https:'].includes(url.protocol) ? 'Enter the whole address, starting with https:// (or http://).' : '')
    kinds.error([...kinds.inputs, ...stockKinds.inputs].some((input) => input.checked) ? '' : 'Choose at least one kind of change.')
    const wrong = [address.input, kinds.inputs[0]].find((input) => input.getAttribute('aria-invalid') === 'true')
    wrong?.focus()
    return wrong === undefined
  }

  async function addSystem (): Promise<void> {
    say(failure, '')
    if (!checked()) return
    const url = address.input.value.trim()
    const events = [...kinds.inputs, ...stockKinds.inputs].filter((input) => input.checked).map((input) => input.value)
    try {
      const { body } = await api<Hook & { secret: string }>('POST', '/v3/webhooks', { body: { url, events } })
      clearForm()
      openForm(false)
      secretSlot.replaceChildren(shownOnce(`The signing secret for ${body.url}`, body.secret,
        'Give it to whoever runs that system: with it the system checks that each message comes from this catalogue. Copy it now: it is not shown again.',
        () => add.focus()))
      tell(`Added ${body.url}: it is told of the changes from now on.`)
      void refresh()
    } catch (err) {
      const wrongUrl = err instanceof ApiError && err.status === 400 ? err.problem?.errors?.find((e) => e.path === '/url') : undefined
      if (wrongUrl !== undefined) {
        address.error(addressProblem(wrongUrl.message))
        address.input.focus()
        return
      }
      const refusal = refusalOf(err)
      say(failure, refusal === 'none'
        ? 'Nothing was added: a manager’s key is needed.'
        : refusal === 'lower' ? 'Nothing was added: the key this tab holds is not a manager’s key.' : `Nothing was added. ${describe(err, 'The system')}`)
    }
  }

  /** The systems whose recent deliveries are shown. */
  const opened = new Set<number>()

  function hookRow (hook: Hook): HTMLLIElement {
    const name = el('p', { class: 'admin-title admin-url', text: hook.url, attrs: { tabindex: '-1' } })
    const meta = el('p', { class: 'admin-meta' }, el('span', { text: toldOf(hook.events) }), el('span', { text: `Added ${at(hook.createdAt)}` }))
    const text = el('div', { class: 'admin-text' }, name, meta)
    const state = standing(hook)
    if (state !== '') text.append(el('p', { class: hook.status === 'paused' ? 'admin-state' : 'admin-problem', text: state }))
    const tested = el('p', { class: 'admin-state', attrs: { 'data-role': 'tested' } })
    tested.hidden = true
    text.append(tested)

    const pause = el('button', { class: 'small', text: hook.status === 'active' ? 'Pause' : 'Resume', attrs: { type: 'button', 'data-role': 'toggle', 'aria-label': `${hook.status === 'active' ? 'Pause' : 'Resume'}: ${hook.url}` } })
    const test = el('button', { class: 'small', text: 'Send a test', attrs: { type: 'button', 'data-role': 'test', 'aria-label': `Send a test: ${hook.url}` } })
    const shown = el('div', { class: 'deliveries' })
    shown.id = newId('deliveries')
    shown.hidden = true
    const history = el('button', { class: 'small', text: 'Recent deliveries', attrs: { type: 'button', 'data-role': 'deliveries', 'aria-expanded': 'false', 'aria-controls': shown.id, 'aria-label': `Recent deliveries: ${hook.url}` } })
    const remove = el('button', { class: 'small danger', text: 'Remove…', attrs: { type: 'button', 'aria-label': `Remove: ${hook.url}` } })
    pause.addEventListener('click', () => { void once(pause, () => setStatus(hook, hook.status === 'active' ? 'paused' : 'active')) })
    test.addEventListener('click', () => { void once(test, () => sendTest(hook, tested, shown)) })
    const toggle = (open: boolean): void => {
      shown.hidden = !open
      history.setAttribute('aria-expanded', String(open))
      if (open) void showDeliveries(hook, shown)
    }
    history.addEventListener('click', () => {
      if (shown.hidden) opened.add(hook.id)
      else opened.delete(hook.id)
      toggle(shown.hidden)
    })
    // Deliveries opened stay open when the list is read again (after a pause, a test, Check again).
    if (opened.has(hook.id)) toggle(true)
    remove.addEventListener('click', () => { void removeSystem(hook, remove) })
    return el('li', { class: `admin-item system-${hook.status}`, attrs: { 'data-id': String(hook.id) } },
      text,
      el('span', { class: `status status-system-${hook.status}`, text: STATUS_LABELS[hook.status] }),
      el('div', { class: 'admin-actions' }, pause, test, history, remove),
      shown)
  }

  /** After a change the list is read again; focus goes back to the same control of the same system. */
  async function reloadFocusing (id: number, role: string): Promise<void> {
    await refresh()
    list.querySelector<HTMLElement>(`li[data-id="${id}"] [data-role="${role}"]`)?.focus()
  }

  async function setStatus (hook: Hook, status: 'active' | 'paused'): Promise<void> {
    try {
      await api('PATCH', `/v3/webhooks/${hook.id}`, { body: { status } })
      tell(status === 'paused'
        ? `Paused ${hook.url}: it is told nothing until it is resumed.`
        : `Resumed ${hook.url}: it gets the changes it missed, oldest first.`)
      await reloadFocusing(hook.id, 'toggle')
    } catch (err) {
      tell(`${hook.url} was not ${status === 'paused' ? 'paused' : 'resumed'}. ${actionProblem(err)}`)
    }
  }

  async function sendTest (hook: Hook, line: HTMLElement, shown: HTMLElement): Promise<void> {
    say(line, 'Sending a test…')
    try {
      const { body } = await api<Delivery>('POST', `/v3/webhooks/${hook.id}/test`)
      say(line, `Test sent ${atSeconds(body.at)}: ${outcomeInSentence(body)}.`)
      tell(`Test sent to ${hook.url}: ${outcomeInSentence(body)}.`)
      if (!shown.hidden) await showDeliveries(hook, shown)
    } catch (err) {
      say(line, '')
      tell(`No test was sent. ${actionProblem(err)}`)
    }
  }

  async function showDeliveries (hook: Hook, shown: HTMLElement): Promise<void> {
    shown.setAttribute('aria-busy', 'true')
    try {
      const { body } = await api<{ items: Delivery[] }>('GET', `/v3/webhooks/${hook.id}/deliveries`, { key: true })
      if (body.items.length === 0) {
        shown.replaceChildren(el('p', { class: 'hint', text: 'Nothing has been sent to it yet.' }))
        return
      }
      const rows = body.items.slice(0, SHOWN_DELIVERIES).map((d) => el('tr', {},
        el('td', { text: atSeconds(d.at) }),
        el('td', { text: d.seq === 0 ? 'Test' : `Change no. ${d.seq}${d.attempt > 1 ? `, try ${d.attempt}` : ''}` }),
        el('td', { text: outcome(d) })))
      shown.replaceChildren(el('table', {},
        el('caption', { text: `Recent deliveries to ${hook.url}, newest first` }),
        el('thead', {}, el('tr', {}, ...['When', 'Change', 'Outcome'].map((h) => el('th', { attrs: { scope: 'col' }, text: h })))),
        el('tbody', {}, ...rows)))
    } catch (err) {
      shown.replaceChildren(el('p', { class: 'alert', attrs: { role: 'alert' }, text: `The deliveries could not be loaded. ${actionProblem(err)}` }))
    } finally {
      shown.removeAttribute('aria-busy')
    }
  }

  async function removeSystem (hook: Hook, button: HTMLButtonElement): Promise<void> {
    const text = `${hook.url} will no longer be told of changes. This cannot be undone: adding it again gives it a new secret.`
    if (!await confirmFirst('Remove this system?', text, 'Remove')) {
      button.focus()
      return
    }
    button.disabled = true
    try {
      await api('DELETE', `/v3/webhooks/${hook.id}`)
      tell(`Removed ${hook.url}: it is told of no more changes.`)
      await refresh()
      title.focus()
    } catch (err) {
      button.disabled = false
      button.focus()
      tell(`${hook.url} was not removed. ${actionProblem(err)}`)
    }
  }

  function actionProblem (err: unknown): string {
    if (err instanceof ApiError && err.status === 404) return 'It is no longer connected: someone removed it meanwhile.'
    const refusal = refusalOf(err)
    return refusal === undefined ? describe(err, 'The system') : 'A manager’s key is needed.'
  }

  /** Reads the list again after something was done, saying so if it cannot be. */
  const refresh = (): Promise<void> => load().catch((err: unknown) => showRefusal({ needed, failed }, err))

  const { load, needed, failed } = listLoader<Hook>({
    body,
    content,
    list,
    empty,
    what: 'the connected systems',
    path: '/v3/webhooks',
    rows: (items) => items.map(hookRow),
    give,
    retry
  })

  return { root, load, needed, failed, forget: () => { secretSlot.replaceChildren() } }
}
