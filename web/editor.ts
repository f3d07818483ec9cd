import { plantAddress } from './address.js'
import { api, ApiError, Cancelled, describe, type Change, type Plant } from './api.js'
import { changedWords, clearChanged, markChanged } from './changed-marks.js'
import { outcome, theirVersion } from './editor-words.js'
import { EMPTY, FIELDS, inputs, shown, values, type Fields } from './editor-fields.js'
import { same } from './form-text.js'
import { byId, confirmFirst, el, say } from './dom.js'
import { fieldWords } from './field-words.js'
import { historyChanged, resetHistory, setUpHistory } from './history-part.js'
import { keyAtFirstNeed, keyMay, onKeyChange } from './key.js'
import { resetPhotoMessages, showPhotos } from './photos.js'
import { scanGuard } from './scan-guard.js'
import { ownMovement, stockPart } from './stock.js'
import { undoDelete, undoPatch } from './undo.js'

// The plant dialog: add a plant, or edit one with PATCH and If-Match. When someone else changed
// the plant meanwhile, the 412 shows their version beside what was typed, which stays in the form.

interface EditorEvents {
  /**
   * Something was written: the list and the counts follow at once (the feed may be down). `plant`
   * is the plant as written (`added` when it is new), `deleted` the id of one deleted; `undo` takes the change back.
   */
  written (message: string, what?: { plant?: Plant, added?: boolean, deleted?: number, undo?: () => Promise<string> }): void
  /** The dialog closed: where focus goes back to. */
  closed (opener: HTMLElement | undefined, plantId: number | undefined): void
  /** The open plant was changed here and stays open (a version gone back to): the list and the counts follow. */
  changed (plant: Plant): void
}

const dialog = byId<HTMLDialogElement>('editor')
const form = byId<HTMLFormElement>('editor-form')
const title = byId('editor-title')
const alertBox = byId('editor-alert')
const statusBox = byId('editor-status')
const conflict = byId('conflict')
const theirs = byId('theirs')
const saveButton = byId<HTMLButtonElement>('save')
const soldButton = byId<HTMLButtonElement>('mark-sold')
const deleteButton = byId<HTMLButtonElement>('delete')

/** The version saves are conditional on (If-Match); undefined while adding a new plant. */
let base: { plant: Plant, etag: string } | undefined
/** The fields as last put into the form: what differs from them is what staff typed. */
let origin: Fields = EMPTY
let opener: HTMLElement | undefined
let busy = false
/** The open plant was deleted elsewhere: nothing more can be saved to it. */
let gone = false
/** One Idempotency-Key per plant being added, so a retried POST never adds it twice. */
let creation: { body: string, key: string } | undefined
let events: EditorEvents

/** The merge patch of what staff changed in the form: only those fields are sent. */
function changes (): Partial<Fields> {
  const now = values()
  const patch: Partial<Fields> = {}
  for (const field of FIELDS) {
    if (base === undefined || !same(now[field], origin[field])) Object.assign(patch, { [field]: now[field] })
  }
  return patch
}

/** Something typed is not saved: closing asks first. */
function dirty (): boolean {
  const now = values()
  return FIELDS.some((field) => !same(now[field], origin[field]))
}

/** Units typed in the Stock part and not yet received or counted: closing asks first, as for a field. */
const stockTyped = (): boolean => ['s-received', 's-counted'].some((id) => byId<HTMLInputElement>(id).value.trim() !== '')

function fill (plant: Fields): void {
  origin = { ...EMPTY, ...Object.fromEntries(FIELDS.map((f) => [f, plant[f] ?? EMPTY[f]])) } as Fields
  origin.tags = [...origin.tags]
  for (const field of FIELDS) inputs[field].value = shown(field, origin)
  // A sold plant is put back on sale, one step as from its row; "Mark sold" would change nothing.
  soldButton.textContent = origin.status === 'sold' ? 'Mark available' : 'Mark sold'
}

// A plant that tracks stock has its status follow its stock: no Mark sold (Sell one sells). The
// select stays, as the API takes a status by hand: pending (a hold) is never moved by stock.
function showTracking (plant: Plant | undefined): void {
  const tracked = plant !== undefined && plant.stock !== null
  soldButton.hidden = plant === undefined || tracked
  say(byId('f-status-hint'), tracked
    ? 'Follows stock: sold when none is available, available again when some is. Pending stays until you change it (it does not stop sales).'
    : '')
}

function clearMessages (): void {
  say(alertBox, '')
  say(statusBox, '')
  conflict.hidden = true
  clearChanged()
  for (const field of FIELDS) {
    inputs[field].removeAttribute('aria-invalid')
    say(byId(`f-${field}-error`), '')
  }
}

/** Puts each field error next to its field; true when every error found its field. */
function showFieldErrors (err: ApiError): boolean {
  const errors = err.problem?.errors ?? []
  let placed = 0
  let first: HTMLElement | undefined
  for (const { path, message } of errors) {
    const field = FIELDS.find((f) => path === `/${f}` || path.startsWith(`/${f}/`))
    if (field === undefined) continue
    const where = field === 'tags' && path !== '/tags' ? `Tag ${Number(path.split('/')[2]) + 1} ` : ''
    const box = byId(`f-${field}-error`)
    say(box, [box.textContent, where === '' ? fieldWords(field, message) : `${where}${message}.`].filter(Boolean).join(' '))
    inputs[field].setAttribute('aria-invalid', 'true')
    first ??= inputs[field]
    placed += 1
  }
  first?.focus()
  return errors.length > 0 && placed === errors.length
}

/** Said above the fields when the tab's key may sell but not change plants: they are off from the start. */
const scopeNote = el('p', { class: 'hint', attrs: { id: 'editor-scope' } })

function showScope (): void {
  const till = !keyMay('write')
  // A key of scope read changes nothing; a till's, the status of a plant that exists.
  const none = !keyMay('sell') || base === undefined
  for (const field of FIELDS) inputs[field].disabled = till && (field !== 'status' || none)
  deleteButton.disabled = gone || till
  saveButton.disabled = gone || (till && none)
  soldButton.disabled = gone || !keyMay('sell')
  say(scopeNote, till ? `This tab’s key may ${keyMay('sell') ? 'sell' : 'only read'}: it changes ${none ? 'no plant' : 'the status alone'}. To change more, give a key that changes plants (Settings, Forget key), or ask your manager.` : '')
}

function setMode (plant: Plant | undefined): void {
  gone = false
  for (const button of [saveButton, soldButton, deleteButton]) button.disabled = false
  title.textContent = plant === undefined ? 'Add a plant' : 'Edit plant'
  showTracking(plant)
  byId('editor-address').hidden = plant === undefined
  if (plant !== undefined) byId<HTMLAnchorElement>('editor-link').href = plantAddress(plant.id)
  deleteButton.hidden = plant === undefined
  saveButton.textContent = plant === undefined ? 'Add plant' : 'Save'
  showPhotos(plant)
  showScope()
  // Should its script fail to load, the Stock part stays hidden and the rest of the editor works.
  void stockPart().then((part) => part.showStock(plant), () => {})
  resetHistory(base)
}

function show (): void {
  closed = false
  if (!dialog.open) dialog.showModal()
  inputs.name.focus()
}

/** True when nothing typed would be lost, or staff said to discard it; false when they kept editing. */
async function discardFirst (closing = false): Promise<boolean> {
  if (!(dirty() || (closing && stockTyped())) || gone) return true
  const name = base?.plant.name
  return confirmFirst('Discard your changes?', name === undefined ? 'The plant you started has not been added.' : dirty() ? `What you changed in “${name}” has not been saved.` : `The units you typed for “${name}” have not been received or counted.`,
    'Discard changes', undefined, 'Keep editing')
}

/** Closes the editor, asking first when something typed would be lost (Esc, Close, Back); false when staff kept it open. */
export async function leave (): Promise<boolean> {
  if (!dialog.open) return true
  if (!await discardFirst(true)) {
    inputs.name.focus()
    return false
  }
  close()
  return true
}

/** Opens plant `id` in the editor; false when it cannot be read (deleted meanwhile, a stale link). */
export async function openPlant (id: number, from: HTMLElement): Promise<boolean> {
  opener = from
  try {
    const { body, etag } = await api<Plant>('GET', `/v3/plant/${id}`)
    base = { plant: body, etag: etag ?? '' }
  } catch (err) {
    events.written(describe(err))
    return false
  }
  clearMessages()
  resetPhotoMessages()
  fill(base.plant)
  setMode(base.plant)
  await keyAtFirstNeed()
  show()
  return true
}

export async function openNew (from: HTMLElement): Promise<void> {
  opener = from
  base = undefined
  creation = undefined
  clearMessages()
  resetPhotoMessages()
  fill(EMPTY)
  setMode(undefined)
  await keyAtFirstNeed()
  show()
}

function idempotencyKey (body: string): string {
  if (creation?.body !== body) {
    const bytes = crypto.getRandomValues(new Uint8Array(16))
    creation = { body, key: `page-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}` }
  }
  return creation.key
}

async function save (): Promise<void> {
  if (busy) return
  const patch = changes()
  if (base !== undefined && Object.keys(patch).length === 0) {
    clearMessages()
    say(statusBox, 'Nothing to save: no field was changed.')
    return
  }
  busy = true
  saveButton.disabled = true
  clearMessages()
  try {
    if (base === undefined) {
      const body = values()
      const { body: plant, etag } = await api<Plant>('POST', '/v3/plant', { body, idempotencyKey: idempotencyKey(JSON.stringify(body)) })
      base = { plant, etag: etag ?? '' }
      setMode(plant)
      fill(plant)
      say(statusBox, 'Plant added. You can add photos now.')
      events.written(`Added “${plant.name}”.`, { plant, added: true })
    } else {
      const was = base.plant
      const before = Object.fromEntries(Object.keys(patch).map((field) => [field, was[field as keyof Fields]])) as Partial<Fields>
      const { body: plant, etag } = await api<Plant>('PATCH', `/v3/plant/${was.id}`, {
        body: patch, contentType: 'application/merge-patch+json', ifMatch: base.etag
      })
      close()
      const { said, undone } = outcome(plant, before)
      events.written(said, { plant, undo: undoPatch(plant.name, plant.id, before, etag ?? '', undone) })
    }
  } catch (err) {
    await refused(err)
  } finally {
    busy = false
    saveButton.disabled = gone
  }
}

async function refused (err: unknown): Promise<void> {
  if (err instanceof ApiError && err.status === 412 && base !== undefined) return showConflict()
  if (err instanceof ApiError && err.status === 404 && base !== undefined) return markGone(describe(err))
  if (err instanceof ApiError && err.code === 'sku-taken') {
    const holder = err.problem?.holder
    const box = byId('f-sku-error')
    // A number alone tells staff nothing: the plant is named, with a way to look at it beside the form.
    const name = holder === undefined ? undefined : await nameOf(holder)
    const who = holder === undefined ? 'Another plant' : name === undefined ? `Another plant (number ${holder})` : `Another plant, “${name}” (number ${holder}),`
    say(box, `${who} already has this SKU. Each plant needs its own.`)
    if (holder !== undefined) box.append(' ', el('a', { text: 'Open that plant in a new tab', attrs: { href: plantAddress(holder), target: '_blank', rel: 'noopener' } }))
    inputs.sku.setAttribute('aria-invalid', 'true')
    inputs.sku.focus()
    say(alertBox, 'Please correct the fields marked below.')
    return
  }
  if (err instanceof ApiError && (err.status === 400 || err.status === 405) && showFieldErrors(err)) {
    say(alertBox, 'Please correct the fields marked below.')
    return
  }
  say(alertBox, describe(err))
  // Above the fields, it was out of sight of the Save just pressed (a field low in the form).
  alertBox.scrollIntoView({ block: 'nearest' })
}

/** The name of plant `id`, or undefined when it cannot be read. */
async function nameOf (id: number): Promise<string | undefined> {
  try {
    return (await api<Plant>('GET', `/v3/plant/${id}`)).body.name
  } catch {
    return undefined
  }
}

/**
 * Someone else saved first: show their version and rebase on it. The fields staff changed keep
 * what they typed; the others take the new values, so a second Save sends only staff's changes.
 */
async function showConflict (): Promise<void> {
  const id = base!.plant.id
  const typed = new Set(Object.keys(changes()) as Array<keyof Fields>)
  const raw = Object.fromEntries(FIELDS.map((f) => [f, inputs[f].value])) as Record<keyof Fields, string>
  try {
    const { body, etag } = await api<Plant>('GET', `/v3/plant/${id}`)
    base = { plant: body, etag: etag ?? '' }
  } catch (err) {
    say(alertBox, describe(err))
    return
  }
  const plant = base.plant
  historyChanged(plant, base.etag)
  fill(plant)
  for (const field of typed) inputs[field].value = raw[field]
  theirs.replaceChildren(...theirVersion(plant).map(([term, value]) => el('div', {}, el('dt', { text: term }), el('dd', { text: value }))))
  showPhotos(plant)
  conflict.hidden = false
  conflict.focus()
}

function markGone (why: string): void {
  gone = true
  // Said only when true: with nothing typed there is nothing kept.
  say(alertBox, dirty() ? `${why} What you typed is still here; close the dialog to go back to the list.` : why)
  for (const button of [saveButton, soldButton, deleteButton]) button.disabled = true
}

/** A change to the open plant arrived from elsewhere (or our own photo work came back). */
export async function refresh (change?: Change): Promise<void> {
  if (base === undefined || !dialog.open) return
  if (change !== undefined && change.id !== base.plant.id) return
  if (change?.kind === 'deleted') return markGone('This plant was just deleted by someone else. It is in the trash (Trash, at the top of the page), where it can be restored.')
  let fresh: { body: Plant, etag: string | null }
  try {
    fresh = await api<Plant>('GET', `/v3/plant/${base.plant.id}`)
  } catch {
    return // a 404 arrives as its own deleted change
  }
  if (base === undefined) return
  const moved = FIELDS.filter((f) => !same(fresh.body[f], base!.plant[f])).map((f) => inputs[f])
  // Stock moved from this editor (its status may follow) is no one else's change.
  const mine = ownMovement(fresh.etag)
  const kept = moved.length > 0 && dirty() && !mine
  if (!kept) {
    // Nothing typed is at stake: take the new version (photos, or fields nobody is editing).
    base = { plant: fresh.body, etag: fresh.etag ?? '' }
    if (moved.length > 0 && !dirty()) fill(fresh.body)
  }
  // Otherwise the base stays: Save meets a 412 and shows their version beside what was typed.
  if (moved.length > 0 && !mine) {
    markChanged(moved)
    say(statusBox, changedWords(moved, kept))
  }
  showPhotos(fresh.body)
  if (!gone) showTracking(fresh.body)
  void stockPart().then((part) => part.stockChanged(fresh.body), () => {})
  historyChanged(fresh.body, fresh.etag ?? '')
}

/** The plant being edited, for the photo uploads (none while a new plant is not added yet). */
export const editedId = (): number | undefined => base?.plant.id
/** The version of the plant being edited, for the photos' order. */
export const editedEtag = (): string => base?.etag ?? ''

/** The editor was closed on purpose (not by the browser's own Esc handling); its close event comes later, as a task. */
let closed = true

function close (): void {
  const id = base?.plant.id
  closed = true
  if (dialog.open) dialog.close()
  base = undefined
  events.closed(opener, id)
}

async function confirmDelete (): Promise<void> {
  if (base === undefined) return
  const text = `“${base.plant.name}” and its photos will move to the trash, where they can be restored.`
  if (!await confirmFirst('Delete this plant?', text, 'Delete') || base === undefined) return
  // The version on screen now (a change from elsewhere may have come in while the question was open).
  const { plant, etag } = base
  try {
    // If-Match: the plant deleted is the one staff looked at, and its Undo knows the trash entry (its version + 1).
    await api('DELETE', `/v3/plant/${plant.id}`, { ifMatch: etag })
    close()
    // The version the delete was conditional on, as its If-Match named it ("<id>.<version>").
    const version = Number(/\.(\d+)"$/.exec(etag)?.[1])
    events.written(`Deleted “${plant.name}”.`, { deleted: plant.id, undo: undoDelete(plant.name, plant.id, version + 1) })
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      close()
      events.written(`“${plant.name}” was already deleted.`, { deleted: plant.id })
      return
    }
    if (err instanceof ApiError && err.status === 412) return changedBeforeDelete()
    say(alertBox, err instanceof Cancelled ? describe(err) : `Not deleted. ${describe(err)}`)
  }
}

/**
 * Someone changed the plant after staff opened it: it is shown as it is now, what was typed kept.
 * Resolves with the refusal when it could not be read.
 */
async function showAsItIsNow (): Promise<unknown> {
  const id = base!.plant.id
  try {
    const { body, etag } = await api<Plant>('GET', `/v3/plant/${id}`)
    base = { plant: body, etag: etag ?? '' }
  } catch (err) {
    return err
  }
  if (!dirty()) fill(base.plant)
  showPhotos(base.plant)
  historyChanged(base.plant, base.etag)
  return undefined
}

/** Changed since staff opened it: shown as it is now before anything is deleted. */
async function changedBeforeDelete (): Promise<void> {
  const err = await showAsItIsNow()
  if (err !== undefined || base === undefined) return say(alertBox, `Not deleted. ${describe(err)}`)
  say(alertBox, `Not deleted: someone changed “${base.plant.name}” just now. Check it, then delete it again if you still want to.`)
}

export function setUpEditor (handlers: EditorEvents): void {
  events = handlers
  byId('editor-alert').before(scopeNote)
  say(scopeNote, '')
  onKeyChange(showScope)
  // A phone turned: the focused control stays in view, above the sticky buttons.
  window.addEventListener('resize', () => {
    const at = document.activeElement
    if (dialog.open && at instanceof HTMLElement && at !== dialog && dialog.contains(at)) at.scrollIntoView({ block: 'nearest' })
  })
  setUpHistory({
    current: () => base === undefined || gone ? undefined : { ...base },
    discardFirst,
    wentBack: (plant, etag) => {
      base = { plant, etag }
      clearMessages()
      fill(plant)
      showPhotos(plant)
      events.changed(plant)
    },
    // What was typed stays, beside their version, as when a save meets their change.
    reread: async () => {
      if (base === undefined) return
      if (dirty()) await showConflict()
      else await showAsItIsNow()
    },
    gone: markGone
  })
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void save()
  })
  form.addEventListener('keydown', scanGuard([inputs.barcode, inputs.sku], alertBox), true)
  soldButton.addEventListener('click', () => {
    inputs.status.value = origin.status === 'sold' ? 'available' : 'sold'
    void save()
  })
  deleteButton.addEventListener('click', () => { void confirmDelete() })
  byId('use-theirs').addEventListener('click', () => {
    if (base === undefined) return
    fill(base.plant)
    clearMessages()
    say(statusBox, 'The form now shows their version.')
    inputs.name.focus()
  })
  byId('editor-close').addEventListener('click', () => { void leave() })
  dialog.addEventListener('cancel', (event) => {
    event.preventDefault()
    void leave()
  })
  // Chromium closes a dialog on a second Esc without a cancel event when nothing was clicked or
  // typed in between: the form is still there, so it opens again and asks.
  // A close event comes as a task after the closing: when Back closed the editor and Forward opened
  // it again first (a plant read from the cache answers quickly), the event is stale and the editor stays.
  dialog.addEventListener('close', () => {
    if (closed || dialog.open) return
    if (gone || !(dirty() || stockTyped())) return close()
    dialog.showModal()
    void leave()
  })
  // Leaving the page (reload, another address, closing the tab) with unsaved typing: the browser asks.
  window.addEventListener('beforeunload', (event) => {
    if (dialog.open && (dirty() || stockTyped()) && !gone) event.preventDefault()
  })
}
