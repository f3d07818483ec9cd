import { api, ApiError, Cancelled, describe, type Change, type Plant } from './api.js'
import { byId, confirmFirst, el, say } from './dom.js'
import { STATUS_LABELS } from './list.js'
import { resetPhotoMessages, showPhotos } from './photos.js'

// The plant dialog: add a plant, or edit one with PATCH and If-Match. When someone else changed
// the plant meanwhile, the 412 shows their version beside what was typed, which stays in the form.

type Fields = Pick<Plant, 'name' | 'category' | 'tags' | 'status'>
const FIELDS = ['name', 'category', 'tags', 'status'] as const

interface EditorEvents {
  /** Something was written: the list and the counts follow at once (the feed may be down). */
  written (message: string): void
  /** The dialog closed: where focus goes back to. */
  closed (opener: HTMLElement | undefined, plantId: number | undefined): void
}

const dialog = byId<HTMLDialogElement>('editor')
const form = byId<HTMLFormElement>('editor-form')
const title = byId('editor-title')
const alertBox = byId('editor-alert')
const statusBox = byId('editor-status')
const conflict = byId('conflict')
const theirs = byId('theirs')
const inputs = {
  name: byId<HTMLInputElement>('f-name'),
  category: byId<HTMLInputElement>('f-category'),
  tags: byId<HTMLInputElement>('f-tags'),
  status: byId<HTMLSelectElement>('f-status')
}
const saveButton = byId<HTMLButtonElement>('save')
const soldButton = byId<HTMLButtonElement>('mark-sold')
const deleteButton = byId<HTMLButtonElement>('delete')

/** The version saves are conditional on (If-Match); undefined while adding a new plant. */
let base: { plant: Plant, etag: string } | undefined
/** The fields as last put into the form: what differs from them is what staff typed. */
let origin: Fields = { name: '', category: null, tags: [], status: 'available' }
let opener: HTMLElement | undefined
let busy = false
/** The open plant was deleted elsewhere: nothing more can be saved to it. */
let gone = false
/** One Idempotency-Key per plant being added, so a retried POST never adds it twice. */
let creation: { body: string, key: string } | undefined
let events: EditorEvents

const splitTags = (text: string): string[] => [...new Set(text.split(',').map((t) => t.trim()).filter(Boolean))]

function values (): Fields {
  return {
    name: inputs.name.value,
    category: inputs.category.value.trim() === '' ? null : inputs.category.value.trim(),
    tags: splitTags(inputs.tags.value),
    status: inputs.status.value
  }
}

const same = (a: Fields[keyof Fields], b: Fields[keyof Fields]): boolean => JSON.stringify(a) === JSON.stringify(b)

/** The merge patch of what staff changed in the form: only those fields are sent. */
function changes (): Partial<Fields> {
  const now = values()
  const patch: Partial<Fields> = {}
  for (const field of FIELDS) {
    if (base === undefined || !same(now[field], origin[field])) Object.assign(patch, { [field]: now[field] })
  }
  return patch
}

const dirty = (): boolean => Object.keys(changes()).length > 0

function fill (plant: Fields): void {
  origin = { name: plant.name, category: plant.category, tags: [...plant.tags], status: plant.status }
  inputs.name.value = plant.name
  inputs.category.value = plant.category ?? ''
  inputs.tags.value = plant.tags.join(', ')
  inputs.status.value = plant.status
}

function clearMessages (): void {
  say(alertBox, '')
  say(statusBox, '')
  conflict.hidden = true
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
    say(box, [box.textContent, `${where}${message}`.replace(/^./, (c) => c.toUpperCase()) + '.'].filter(Boolean).join(' '))
    inputs[field].setAttribute('aria-invalid', 'true')
    first ??= inputs[field]
    placed += 1
  }
  first?.focus()
  return errors.length > 0 && placed === errors.length
}

function setMode (plant: Plant | undefined): void {
  gone = false
  for (const button of [saveButton, soldButton, deleteButton]) button.disabled = false
  title.textContent = plant === undefined ? 'Add a plant' : 'Edit plant'
  soldButton.hidden = plant === undefined
  deleteButton.hidden = plant === undefined
  saveButton.textContent = plant === undefined ? 'Add plant' : 'Save'
  showPhotos(plant)
}

function show (): void {
  if (!dialog.open) dialog.showModal()
  inputs.name.focus()
}

export async function openPlant (id: number, from: HTMLElement): Promise<void> {
  opener = from
  try {
    const { body, etag } = await api<Plant>('GET', `/v3/plant/${id}`)
    base = { plant: body, etag: etag ?? '' }
  } catch (err) {
    events.written(describe(err))
    return
  }
  clearMessages()
  resetPhotoMessages()
  fill(base.plant)
  setMode(base.plant)
  show()
}

export function openNew (from: HTMLElement): void {
  opener = from
  base = undefined
  creation = undefined
  clearMessages()
  resetPhotoMessages()
  fill({ name: '', category: null, tags: [], status: 'available' })
  setMode(undefined)
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
      events.written(`Added “${plant.name}”.`)
    } else {
      const { body: plant } = await api<Plant>('PATCH', `/v3/plant/${base.plant.id}`, {
        body: patch, contentType: 'application/merge-patch+json', ifMatch: base.etag
      })
      close()
      events.written(`Saved “${plant.name}”.`)
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
  if (err instanceof ApiError && (err.status === 400 || err.status === 405) && showFieldErrors(err)) {
    say(alertBox, 'Please correct the fields marked below.')
    return
  }
  say(alertBox, describe(err))
}

/**
 * Someone else saved first: show their version and rebase on it. The fields staff changed keep
 * what they typed; the others take the new values, so a second Save sends only staff's changes.
 */
async function showConflict (): Promise<void> {
  const id = base!.plant.id
  const typed = new Set(Object.keys(changes()) as Array<keyof Fields>)
  const raw = { name: inputs.name.value, category: inputs.category.value, tags: inputs.tags.value, status: inputs.status.value }
  try {
    const { body, etag } = await api<Plant>('GET', `/v3/plant/${id}`)
    base = { plant: body, etag: etag ?? '' }
  } catch (err) {
    say(alertBox, describe(err))
    return
  }
  const plant = base.plant
  fill(plant)
  for (const field of typed) inputs[field].value = raw[field]
  const rows: Array<[string, string]> = [
    ['Name', plant.name],
    ['Category', plant.category ?? '—'],
    ['Tags', plant.tags.length === 0 ? '—' : plant.tags.join(', ')],
    ['Status', STATUS_LABELS[plant.status] ?? plant.status]
  ]
  theirs.replaceChildren(...rows.map(([term, value]) => el('div', {}, el('dt', { text: term }), el('dd', { text: value }))))
  showPhotos(plant)
  conflict.hidden = false
  conflict.focus()
}

function markGone (why: string): void {
  gone = true
  say(alertBox, `${why} What you typed is still here; close the dialog to go back to the list.`)
  for (const button of [saveButton, soldButton, deleteButton]) button.disabled = true
}

/** A change to the open plant arrived from elsewhere (or our own photo work came back). */
export async function refresh (change?: Change): Promise<void> {
  if (base === undefined || !dialog.open) return
  if (change !== undefined && change.id !== base.plant.id) return
  if (change?.kind === 'deleted') return markGone('This plant was just deleted by someone else.')
  let fresh: { body: Plant, etag: string | null }
  try {
    fresh = await api<Plant>('GET', `/v3/plant/${base.plant.id}`)
  } catch {
    return // a 404 arrives as its own deleted change
  }
  if (base === undefined) return
  const unchangedFields = FIELDS.every((f) => same(fresh.body[f], base!.plant[f]))
  if (unchangedFields || !dirty()) {
    // Nothing typed is at stake: take the new version (photos, or fields nobody is editing).
    base = { plant: fresh.body, etag: fresh.etag ?? '' }
    if (!unchangedFields) fill(fresh.body)
  }
  // Otherwise the base stays: Save meets a 412 and shows their version beside what was typed.
  showPhotos(fresh.body)
}

/** The plant being edited, for the photo uploads (none while a new plant is not added yet). */
export const editedId = (): number | undefined => base?.plant.id

function close (): void {
  const id = base?.plant.id
  if (dialog.open) dialog.close()
  base = undefined
  events.closed(opener, id)
}

async function confirmDelete (): Promise<void> {
  if (base === undefined) return
  const plant = base.plant
  const text = `“${plant.name}” and its photos will be removed from the catalogue. This cannot be undone.`
  if (!await confirmFirst('Delete this plant?', text, 'Delete')) return
  try {
    await api('DELETE', `/v3/plant/${plant.id}`)
    close()
    events.written(`Deleted “${plant.name}”.`)
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      close()
      events.written(`“${plant.name}” was already deleted.`)
      return
    }
    say(alertBox, err instanceof Cancelled ? describe(err) : `Not deleted. ${describe(err)}`)
  }
}

export function setUpEditor (handlers: EditorEvents): void {
  events = handlers
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void save()
  })
  soldButton.addEventListener('click', () => {
    inputs.status.value = 'sold'
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
  byId('editor-close').addEventListener('click', () => close())
  dialog.addEventListener('cancel', (event) => {
    event.preventDefault()
    close()
  })
}
