import { api, ApiError, describe } from './api.js'
import { confirmFirst, el, say } from './dom.js'
import { at, choices, dayBefore, field, isMidnightUtc, listLoader, newId, once, refusalOf, shownOnce, showRefusal, type Part } from './admin-parts.js'
import { tell } from './toast.js'

// The keys a manager gives out (GET, POST /v3/keys, DELETE /v3/keys/{name}): each till, shop front
// or person has its own, allowed no more than it needs. A new key's secret is shown this once;
// revoking one asks first, naming it. The keys set where the catalogue runs (env-1, …) are not
// stored, so they are not listed, and this part says how they go instead.

type Scope = 'read' | 'sell' | 'write' | 'admin'
interface ApiKey {
  name: string
  scope: Scope
  createdAt: string
  expiresAt: string | null
  lastUsedAt: string | null
  revokedAt: string | null
  status: 'active' | 'expired' | 'revoked'
  source: 'stored' | 'environment'
}

/** What each scope lets a key do, in staff's words; each includes those before it. */
const SCOPES: Array<{ value: Scope, label: string, hint: string }> = [
  { value: 'read', label: 'Read only', hint: 'Sees the plants and changes nothing: a shop front.' },
  { value: 'sell', label: 'Sell', hint: 'Marks plants sold, and changes nothing else: a till.' },
  { value: 'write', label: 'Change plants', hint: 'Adds, edits and deletes plants and their photos: staff, or another system.' },
  { value: 'admin', label: 'Manage', hint: 'All of that, and the keys, the connected systems and emptying the trash: a manager.' }
]
const SCOPE_LABELS = Object.fromEntries(SCOPES.map((s) => [s.value, s.label])) as Record<Scope, string>
const STATUS_LABELS: Record<ApiKey['status'], string> = { active: 'Works', expired: 'Expired', revoked: 'Revoked' }
const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/
const ENV_NAME = /^env-\d+$/

function expiry (key: ApiKey): string {
  if (key.expiresAt === null) return 'Does not expire'
  // A day given as the last one ("2027-01-31") is kept as the start of the next, UTC: named as given.
  const whole = isMidnightUtc(key.expiresAt)
  if (key.status === 'expired') return whole ? `Worked through ${dayBefore(key.expiresAt)}` : `Expired ${at(key.expiresAt)}`
  return whole ? `Works through ${dayBefore(key.expiresAt)}` : `Expires ${at(key.expiresAt)}`
}

export function keysPart (give: () => void, retry: () => void): Part {
  const titleId = newId('keys-title')
  const root = el('section', { class: 'panel', attrs: { 'aria-labelledby': titleId, 'data-part': 'keys' } },
    el('h3', { attrs: { id: titleId, tabindex: '-1' }, text: 'Keys' }))
  const body = el('div', { class: 'panel-body' })
  root.append(body)

  const secretSlot = el('div')
  /** The key whose secret the slot shows, if any: revoked, its secret has no use and leaves the screen. */
  let secretOf: string | undefined
  const list = el('ul', { class: 'admin-list', attrs: { 'aria-label': 'Keys' } })
  const empty = el('p', { text: 'No keys have been made here yet.' })
  empty.hidden = true
  const newKey = el('button', { text: 'New key', attrs: { type: 'button', 'aria-expanded': 'false' } })
  const form = el('form', { class: 'admin-form', attrs: { novalidate: '', 'aria-label': 'New key' } })
  form.id = newId('new-key')
  newKey.setAttribute('aria-controls', form.id)
  form.hidden = true
  const content = el('div', { class: 'panel-body' },
    el('p', { class: 'hint', text: 'Give each till, shop front and person a key of their own that allows no more than they need: one can then be revoked without stopping the others.' }),
    secretSlot, list, empty,
    el('p', { class: 'hint', text: 'Keys set up where the catalogue runs (named in its settings, or env-1, env-2, …) are not listed here and cannot be revoked here: whoever runs the catalogue removes them from its settings and restarts it.' }),
    el('div', { class: 'panel-actions' }, newKey), form)

  // The new key's form.
  const name = field('Name', { type: 'text', maxlength: '63' }, 'Who or what will use it, e.g. till-3 or shop-website: lower-case letters, digits, dots, dashes and underscores.')
  const scope = choices('What it may do', 'radio', SCOPES)
  const last = field('Last day it works (optional)', { type: 'date' }, 'Leave empty for a key that works until it is revoked.')
  const failure = el('p', { class: 'alert', attrs: { role: 'alert' } })
  failure.hidden = true
  const create = el('button', { class: 'primary', text: 'Make key', attrs: { type: 'submit' } })
  const cancel = el('button', { text: 'Cancel', attrs: { type: 'button' } })
  form.append(failure, name.wrap, scope.wrap, last.wrap, el('div', { class: 'panel-actions' }, create, cancel))

  function openForm (open: boolean): void {
    form.hidden = !open
    newKey.setAttribute('aria-expanded', String(open))
    if (open) name.input.focus()
  }
  function clearForm (): void {
    form.reset()
    for (const part of [name, scope, last]) part.error('')
    say(failure, '')
  }
  newKey.addEventListener('click', () => {
    secretSlot.replaceChildren()
    openForm(form.hidden)
  })
  cancel.addEventListener('click', () => {
    clearForm()
    openForm(false)
    newKey.focus()
  })
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void once(create, make)
  })

  /** The form's own checks, said beside each field; true when it may be sent. */
  function checked (): boolean {
    const given = name.input.value.trim()
    name.error(given === ''
      ? 'Enter a name: who or what will use the key, e.g. till-3.'
      : !NAME.test(given)
          ? 'Use lower-case letters, digits, dots, dashes and underscores only (no spaces), starting with a letter or digit, at most 63: e.g. till-3.'
          : ENV_NAME.test(given) ? 'Names like env-1 belong to the keys set up where the catalogue runs: choose another.' : '')
    scope.error(scope.inputs.some((input) => input.checked) ? '' : 'Choose what the key may do.')
    last.error(last.input.validity.badInput ? 'Enter a whole date, or leave it empty.' : '')
    const wrong = [name.input, scope.inputs[0], last.input].find((input) => input.getAttribute('aria-invalid') === 'true')
    wrong?.focus()
    return wrong === undefined
  }

  async function make (): Promise<void> {
    say(failure, '')
    if (!checked()) return
    const keyName = name.input.value.trim()
    const chosen = scope.inputs.find((input) => input.checked)?.value as Scope
    const until = last.input.value
    try {
      const { body } = await api<ApiKey & { secret: string }>('POST', '/v3/keys', { body: { name: keyName, scope: chosen, ...(until === '' ? {} : { expiresAt: until }) } })
      clearForm()
      openForm(false)
      secretOf = body.name
      secretSlot.replaceChildren(shownOnce(`The new key for “${body.name}” (${SCOPE_LABELS[body.scope]})`, body.secret,
        'Copy it now and give it to whoever will use it: it is not shown again. If it is lost, revoke it and make a new one.',
        () => newKey.focus()))
      tell(`Made the key “${body.name}”.`)
      void refresh()
    } catch (err) {
      refused(err, keyName)
    }
  }

  /** A refusal of a new key, said at the field it is about when there is one. */
  function refused (err: unknown, keyName: string): void {
    if (err instanceof ApiError && err.code === 'key-name-taken') {
      name.error(`A key named “${keyName}” exists already (a revoked key keeps its name). Choose another name.`)
      name.input.focus()
      return
    }
    const fields = err instanceof ApiError && err.status === 400 ? err.problem?.errors ?? [] : []
    for (const { path, message } of fields) {
      if (path === '/name') name.error(ENV_NAME.test(keyName) ? 'Names like env-1 belong to the keys set up where the catalogue runs: choose another.' : 'Use lower-case letters, digits, dots, dashes and underscores only, starting with a letter or digit.')
      else if (path === '/expiresAt') last.error(/future|passed/.test(message) ? 'That day has passed: choose today or a later day.' : 'Enter a whole date, or leave it empty.')
      else if (path === '/scope') scope.error('Choose what the key may do.')
    }
    const wrong = form.querySelector<HTMLElement>('[aria-invalid="true"]')
    if (wrong !== null) {
      wrong.focus()
      return
    }
    const refusal = refusalOf(err)
    say(failure, refusal === 'none'
      ? 'Nothing was made: a manager’s key is needed.'
      : refusal === 'lower'
        ? 'Nothing was made: the key this tab holds is not a manager’s key.'
        : `Nothing was made. ${describe(err, 'The key')}`)
  }

  function keyRow (key: ApiKey): HTMLLIElement {
    const meta = el('p', { class: 'admin-meta' },
      el('span', { class: 'admin-scope', text: SCOPE_LABELS[key.scope] }),
      el('span', { text: `Made ${at(key.createdAt)}` }),
      el('span', { text: key.lastUsedAt === null ? 'Never used' : `Last used ${at(key.lastUsedAt)}` }),
      el('span', { text: expiry(key) }))
    if (key.revokedAt !== null) meta.append(el('span', { text: `Revoked ${at(key.revokedAt)}` }))
    const title = el('p', { class: 'admin-title', text: key.name, attrs: { tabindex: '-1' } })
    const actions = el('div', { class: 'admin-actions' })
    if (key.status !== 'revoked') {
      const revoke = el('button', { class: 'small danger', text: 'Revoke…', attrs: { type: 'button', 'aria-label': `Revoke: ${key.name}` } })
      revoke.addEventListener('click', () => { void revokeKey(key.name, revoke) })
      actions.append(revoke)
    }
    return el('li', { class: `admin-item key-${key.status}`, attrs: { 'data-name': key.name } },
      el('div', { class: 'admin-text' }, title, meta),
      el('span', { class: `status status-key-${key.status}`, text: STATUS_LABELS[key.status] }),
      actions)
  }

  async function revokeKey (keyName: string, button: HTMLButtonElement): Promise<void> {
    const text = `“${keyName}” stops working at once, wherever it is used. This cannot be undone: whoever uses it will need a new key.`
    if (!await confirmFirst(`Revoke the key “${keyName}”?`, text, 'Revoke key')) {
      button.focus()
      return
    }
    button.disabled = true
    try {
      await revokeOrConfirm(keyName)
      tell(`Revoked “${keyName}”: it no longer works.`)
      if (secretOf === keyName) secretSlot.replaceChildren()
      await refresh()
      list.querySelector<HTMLElement>(`li[data-name="${CSS.escape(keyName)}"] .admin-title`)?.focus()
    } catch (err) {
      button.disabled = false
      button.focus()
      if (err instanceof ApiError && err.code === 'key-from-environment') {
        tell(`“${keyName}” was not revoked: it is set up where the catalogue runs, not here. Whoever runs the catalogue removes it from its settings and restarts it.`)
      } else if (err instanceof ApiError && err.status === 404) {
        tell(`“${keyName}” was not revoked: there is no key of that name now.`)
      } else {
        const refusal = refusalOf(err)
        tell(`“${keyName}” was not revoked. ${refusal === undefined ? describe(err, 'The key') : 'A manager’s key is needed.'}`)
      }
    }
  }

  /** The key this page itself uses is revoked only once asked again: the page would be locked out with it. */
  async function revokeOrConfirm (keyName: string): Promise<void> {
    const url = `/v3/keys/${encodeURIComponent(keyName)}`
    try {
      await api('DELETE', url)
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 'revoking-own-key')) throw err
      const text = `“${keyName}” is the key this page is using. Revoked, it stops working here too, and this page will ask for another key.`
      if (!await confirmFirst('Revoke the key this page uses?', text, 'Revoke it anyway')) throw err
      await api('DELETE', `${url}?confirm=true`)
    }
  }

  /** Reads the keys and shows them; a refusal is thrown to the caller, which says what is needed. */
  const { load, needed, failed } = listLoader<ApiKey>({
    body,
    content,
    list,
    empty,
    what: 'the keys',
    path: '/v3/keys',
    // The keys of the service's settings are not the page's to revoke (the hint above says where they are).
    rows: (items) => items.filter((key) => key.source !== 'environment').map(keyRow),
    give,
    retry
  })

  /** Reads the list again after something was done, saying so if it cannot be. */
  const refresh = (): Promise<void> => load().catch((err: unknown) => showRefusal({ needed, failed }, err))

  return { root, load, needed, failed, forget: () => { secretSlot.replaceChildren() } }
}
