import { api, ApiError, describe, type Plant } from './api.js'
import { byId, confirmFirst, el, say } from './dom.js'

// The open plant's photos: shown as thumbnails, added from the file picker or by dropping files,
// removed one by one. Each upload is its own request; the plant's record comes back afterwards.

interface PhotoEvents {
  /** The plant whose photos are shown (undefined while a new plant is not saved yet). */
  plantId (): number | undefined
  /** A photo was added or removed: read the plant again. */
  changed (): Promise<void>
}

const section = byId('photos')
const listing = byId<HTMLUListElement>('photo-list')
const input = byId<HTMLInputElement>('photo-input')
const drop = byId('photo-drop')
const status = byId('photo-status')
const alert = byId('photo-alert')
let events: PhotoEvents

/** Shows the plant's photos; none while a new plant is not added yet. */
export function showPhotos (plant: Plant | undefined): void {
  section.hidden = plant === undefined
  if (plant === undefined) return
  const count = plant.photos.length
  listing.replaceChildren(...plant.photos.map((photo, i) => {
    const label = count === 1 ? 'the photo' : `photo ${i + 1}`
    const img = el('img', { attrs: { src: photo.urls.thumb, alt: `${i === 0 ? 'Cover photo' : `Photo ${i + 1}`} of ${plant.name}`, width: '96', height: '96', decoding: 'async' } })
    const remove = el('button', { class: 'small', text: 'Remove', attrs: { type: 'button', 'aria-label': `Remove ${label}` } })
    const what = count === 1 ? 'The photo' : i === 0 ? 'The cover photo' : `Photo ${i + 1}`
    remove.addEventListener('click', () => { void removePhoto(photo.id, remove, what) })
    return el('li', { class: 'photo' }, img, remove)
  }))
  say(byId('photo-empty'), count === 0 ? 'No photos yet.' : '')
}

/** Clears what an earlier plant's uploads said. */
export function resetPhotoMessages (): void {
  say(status, '')
  say(alert, '')
}

async function upload (files: File[]): Promise<void> {
  const id = events.plantId()
  if (id === undefined || files.length === 0) return
  say(alert, '')
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

async function removePhoto (photoId: string, button: HTMLButtonElement, label: string): Promise<void> {
  const id = events.plantId()
  if (id === undefined) return
  // A photo removed is gone from the service: one slip of the finger must not do it.
  if (!await confirmFirst('Remove this photo?', `${label} will be deleted. This cannot be undone.`, 'Remove', button.closest('li') ?? undefined)) {
    button.focus()
    return
  }
  button.disabled = true
  say(alert, '')
  try {
    await api('DELETE', `/v3/plant/${id}/photos/${encodeURIComponent(photoId)}`)
    say(status, 'Photo removed.')
    await events.changed()
    input.focus()
    inView()
  } catch (err) {
    button.disabled = false
    say(alert, describe(err, 'This photo'))
    inView()
  }
}

export function setUpPhotos (handlers: PhotoEvents): void {
  events = handlers
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
