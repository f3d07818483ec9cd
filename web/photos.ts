import { api, ApiError, describe, type Photo, type Plant } from './api.js'
import { byId, confirmFirst, el, say } from './dom.js'
import { moved, movedWords, sendOrder } from './photo-order.js'
import { enlarge, setUpViewer } from './photo-viewer.js'
import { notUndone } from './undo.js'

// The open plant's photos: shown as thumbnails (each enlarged on a click), added from the file
// picker or by dropping files, put in order (dragged, or moved by buttons) with a cover chosen,
// removed one by one. Each upload is its own request; the plant's record comes back afterwards.

interface PhotoEvents {
  /** The plant whose photos are shown (undefined while a new plant is not saved yet). */
  plantId (): number | undefined
  /** The version of the plant the photos shown belong to (their order is sent with If-Match on it). */
  etag (): string
  /** A photo was added or removed: read the plant again. */
  changed (): Promise<void>
}

const section = byId('photos')
const listing = byId<HTMLUListElement>('photo-list')
const input = byId<HTMLInputElement>('photo-input')
const drop = byId('photo-drop')
const status = byId('photo-status')
const alert = byId('photo-alert')
const undoButton = byId<HTMLButtonElement>('photo-undo')
let events: PhotoEvents
/** The photos as last shown, in order: what a removal's Undo puts back. */
let shown: Photo[] = []
/** Undo of the last removal, offered beside "Photo removed." while the plant stays open. */
let undo: (() => Promise<void>) | undefined
let plantName = ''
/** The photo being dragged to another place, by its index. */
let dragged: number | undefined

/** Shows the plant's photos; none while a new plant is not added yet. */
export function showPhotos (plant: Plant | undefined): void {
  section.hidden = plant === undefined
  if (plant === undefined) return
  const count = plant.photos.length
  shown = plant.photos
  plantName = plant.name
  // Shown again (a reorder, or the feed's change for it arriving after): focus stays with its photo.
  const active = document.activeElement instanceof HTMLElement && listing.contains(document.activeElement) ? document.activeElement : undefined
  const held = active === undefined ? undefined : { id: active.closest('li')?.dataset.id, role: active.dataset.role }
  listing.replaceChildren(...plant.photos.map((photo, i) => photoItem(photo, i, count)))
  if (held?.id !== undefined) focusIn(held.id, held.role)
  say(byId('photo-empty'), count === 0 ? 'No photos yet.' : '')
}

function photoItem (photo: Photo, i: number, count: number): HTMLLIElement {
  const label = count === 1 ? 'the photo' : `photo ${i + 1}`
  const img = el('img', { attrs: { src: photo.urls.thumb, alt: `${i === 0 ? 'Cover photo' : `Photo ${i + 1}`} of ${plantName}`, width: '96', height: '96', decoding: 'async' } })
  const open = el('button', { class: 'photo-open', attrs: { type: 'button', 'aria-label': `Enlarge ${label}`, 'data-role': 'enlarge' } }, img)
  open.addEventListener('click', () => enlarge(shown, i, plantName, open))
  const remove = el('button', { class: 'small', text: 'Remove', attrs: { type: 'button', 'aria-label': `Remove ${label}`, 'data-role': 'remove' } })
  const what = count === 1 ? 'The photo' : i === 0 ? 'The cover photo' : `Photo ${i + 1}`
  remove.addEventListener('click', () => { void removePhoto(photo, remove, what) })
  const item = el('li', { class: 'photo', attrs: { 'data-id': photo.id } }, open)
  if (count > 1) {
    // The keyboard's way to reorder (dragging needs a pointer): one place earlier or later, or first.
    const tools = el('div', { class: 'photo-tools' })
    const step = (to: number, text: string, name: string): void => {
      const button = el('button', { class: 'small icon', text, attrs: { type: 'button', 'aria-label': name, 'data-role': name.split(' ').at(-1)! } })
      button.disabled = to < 0 || to >= count
      button.addEventListener('click', () => { void reorder(moved(shown, i, to), photo.id, movedWords(i, to)) })
      tools.append(button)
    }
    step(i - 1, '←', `Move photo ${i + 1} earlier`)
    step(i + 1, '→', `Move photo ${i + 1} later`)
    item.append(tools)
    if (i === 0) item.append(el('span', { class: 'cover-badge', text: 'Cover' }))
    else {
      const cover = el('button', { class: 'small', text: 'Make cover', attrs: { type: 'button', 'aria-label': `Make cover: photo ${i + 1}` } })
      cover.addEventListener('click', () => { void reorder(moved(shown, i, 0), photo.id, 'The photo you chose is now the cover: it shows first.') })
      item.append(cover)
    }
    item.draggable = true
    item.addEventListener('dragstart', (event) => {
      dragged = i
      event.dataTransfer?.setData('text/x-plant-photo', photo.id)
      if (event.dataTransfer !== null) event.dataTransfer.effectAllowed = 'move'
    })
    item.addEventListener('dragover', (event) => {
      if (dragged === undefined) return
      event.preventDefault()
      item.classList.add('drop-here')
    })
    item.addEventListener('dragleave', () => item.classList.remove('drop-here'))
    item.addEventListener('drop', (event) => {
      item.classList.remove('drop-here')
      const from = dragged
      dragged = undefined
      if (from === undefined || from === i) return
      event.preventDefault()
      void reorder(moved(shown, from, i), shown[from].id, movedWords(from, i))
    })
    item.addEventListener('dragend', () => { dragged = undefined })
  }
  item.append(remove)
  return item
}

/**
 * Puts the photos in `order`; focus stays with the photo that moved (on its Move button that still
 * applies, so Enter can move it again).
 */
async function reorder (order: string[], photoId: string, said: string): Promise<void> {
  const id = events.plantId()
  if (id === undefined) return
  const role = (document.activeElement as HTMLElement | null)?.dataset.role
  say(alert, '')
  offerUndo(undefined)
  const { text, refused } = await sendOrder(id, order, events.etag(), said)
  await events.changed()
  if (refused) say(alert, text)
  else say(status, text)
  focusIn(photoId, role)
  inView()
}

/** Focus on photo `photoId`'s button of `role`, or its other Move button when that one no longer applies. */
function focusIn (photoId: string, role: string | undefined): void {
  const item = listing.querySelector<HTMLElement>(`li[data-id="${CSS.escape(photoId)}"]`)
  const buttons = [...item?.querySelectorAll<HTMLButtonElement>('button') ?? []].filter((b) => !b.disabled)
  const again = buttons.find((b) => b.dataset.role === role) ?? buttons.find((b) => b.classList.contains('icon'))
  ;(again ?? item?.querySelector<HTMLElement>('.photo-open'))?.focus()
}

/** Clears what an earlier plant's uploads said. */
export function resetPhotoMessages (): void {
  say(status, '')
  say(alert, '')
  offerUndo(undefined)
}

function offerUndo (run: (() => Promise<void>) | undefined): void {
  undo = run
  undoButton.hidden = run === undefined
  undoButton.disabled = false
}

async function upload (files: File[]): Promise<void> {
  const id = events.plantId()
  if (id === undefined || files.length === 0) return
  say(alert, '')
  offerUndo(undefined)
  let done = 0
  for (const [i, file] of files.entries()) {
    say(status, files.length === 1 ? `Uploading ${file.name}…` : `Uploading ${file.name} (${i + 1} of ${files.length})…`)
    inView()
    try {
      await api('POST', `/v3/plant/${id}/photos`, { raw: file, contentType: await pictureType(file) })
      done += 1
    } catch (err) {
      say(alert, `${file.name} was not added. ${uploadRefusal(err)}`)
    }
  }
  say(status, done === 0 ? '' : done === 1 ? 'Photo added and saved.' : `${done} photos added and saved.`)
  if (done > 0) await events.changed()
  inView()
}

/**
 * The file's type from its first bytes when it is one the service takes: the browser's guess comes
 * from the name, and a PNG saved as .jpg would be refused as "not a readable image/jpeg".
 */
async function pictureType (file: File): Promise<string> {
  const head = new Uint8Array(await file.slice(0, 12).arrayBuffer())
  const text = (from: number, to: number): string => String.fromCharCode(...head.subarray(from, to))
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg'
  if (text(0, 8) === '\x89PNG\r\n\x1a\n') return 'image/png'
  if (text(0, 4) === 'RIFF' && text(8, 12) === 'WEBP') return 'image/webp'
  return file.type || 'application/octet-stream'
}

/**
 * Why an upload was refused, in staff's words. The service's 400 names the rule in API terms ("the
 * body is not a readable image/jpeg picture"); staff need to know what to choose instead.
 */
function uploadRefusal (err: unknown): string {
  const detail = err instanceof ApiError && err.status === 400 ? err.problem?.detail ?? '' : ''
  if (/megapixels/.test(detail)) return 'This photo has too many pixels (at most 50 megapixels): choose a smaller one.'
  if (/would be stored as/.test(detail)) return 'This photo cannot be kept within 10 MB, even made smaller: choose a smaller photo.'
  if (/^the (body|picture) (is|could not)/.test(detail)) return 'This file is not a picture we can read: choose a JPEG, PNG or WebP photo.'
  return describe(err, 'This plant')
}

/** On a small screen the photo messages are below the fold of the dialog: bring the one shown into view. */
function inView (): void {
  const shown = [alert, status].find((node) => !node.hidden)
  shown?.scrollIntoView({ block: 'nearest' })
}

async function removePhoto (photo: Photo, button: HTMLButtonElement, label: string): Promise<void> {
  const id = events.plantId()
  if (id === undefined) return
  // One slip of the finger must not do it; and Undo is offered after, for as long as the plant is open.
  if (!await confirmFirst('Remove this photo?', `${label} will be removed. You can undo this while the plant is open.`, 'Remove', button.closest('li') ?? undefined)) {
    button.focus()
    return
  }
  button.disabled = true
  say(alert, '')
  offerUndo(undefined)
  const order = shown.map((p) => p.id)
  try {
    // The picture itself, to add back on Undo: once removed, the service may drop its bytes.
    const picture = await fetch(photo.urls.full).then((res) => res.ok ? res.blob() : undefined, () => undefined)
    const { etag } = await api('DELETE', `/v3/plant/${id}/photos/${encodeURIComponent(photo.id)}`)
    say(status, 'Photo removed.')
    if (picture !== undefined) offerUndo(() => putBack(id, picture, order, photo.id, etag ?? ''))
    await events.changed()
    ;(picture !== undefined ? undoButton : input).focus()
    inView()
  } catch (err) {
    button.disabled = false
    say(alert, describe(err, 'This photo'))
    inView()
  }
}

/**
 * Undo of a removal: the picture is added again with If-Match on the version the removal made (a
 * change since refuses it), then put back in its place among the others.
 */
async function putBack (id: number, picture: Blob, order: string[], removed: string, etag: string): Promise<void> {
  try {
    const added = await api<Photo>('POST', `/v3/plant/${id}/photos`, { raw: picture, contentType: picture.type, ifMatch: etag })
    const back = order.map((p) => p === removed ? added.body.id : p)
    if (back.at(-1) !== added.body.id) {
      await api('PUT', `/v3/plant/${id}/photos/order`, { body: { order: back }, ifMatch: added.etag ?? '' })
    }
    say(status, 'Undone: the photo is back.')
  } catch (err) {
    say(alert, notUndone(err, 'this plant'))
  }
  await events.changed()
  input.focus()
  inView()
}

export function setUpPhotos (handlers: PhotoEvents): void {
  events = handlers
  setUpViewer()
  undoButton.addEventListener('click', () => {
    const run = undo
    if (run === undefined) return
    offerUndo(undefined)
    say(status, 'Putting the photo back…')
    void run()
  })
  input.addEventListener('change', () => {
    const files = [...input.files ?? []]
    input.value = ''
    void upload(files)
  })
  drop.addEventListener('dragover', (event) => {
    if (!event.dataTransfer?.types.includes('Files')) return
    event.preventDefault()
    event.dataTransfer.dropEffect = 'copy'
    drop.classList.add('dragging')
  })
  drop.addEventListener('dragleave', () => drop.classList.remove('dragging'))
  drop.addEventListener('drop', (event) => {
    event.preventDefault()
    drop.classList.remove('dragging')
    void upload([...event.dataTransfer?.files ?? []])
  })
}
