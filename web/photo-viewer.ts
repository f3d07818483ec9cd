import type { Photo } from './api.js'
import { byId } from './dom.js'

// A photo enlarged: its display size (fits 1280 × 1280) in a dialog over the editor, with the
// plant's other photos a button (or an arrow key) away. Esc or Close goes back to the editor.

const viewer = byId<HTMLDialogElement>('viewer')
const title = byId('viewer-title')
const picture = byId<HTMLImageElement>('viewer-img')
const previous = byId<HTMLButtonElement>('viewer-prev')
const next = byId<HTMLButtonElement>('viewer-next')
let photos: Photo[] = []
let name = ''
let at = 0

function show (i: number): void {
  at = i
  const photo = photos[i]
  title.textContent = `Photo ${i + 1} of ${photos.length}`
  picture.alt = `${i === 0 ? 'Cover photo' : `Photo ${i + 1}`} of ${name}, enlarged`
  picture.width = photo.width
  picture.height = photo.height
  picture.src = photo.urls.display
  previous.disabled = i === 0
  next.disabled = i === photos.length - 1
}

/** Enlarges photo `i` of the plant named `plantName`; focus goes back to `from` afterwards. */
export function enlarge (all: Photo[], i: number, plantName: string, from: HTMLElement): void {
  photos = all
  name = plantName
  show(i)
  viewer.showModal()
  byId('viewer-close').focus()
  viewer.addEventListener('close', () => from.focus(), { once: true })
}

export function setUpViewer (): void {
  previous.addEventListener('click', () => { if (at > 0) show(at - 1) })
  next.addEventListener('click', () => { if (at < photos.length - 1) show(at + 1) })
  byId('viewer-close').addEventListener('click', () => viewer.close())
  viewer.addEventListener('keydown', (event) => {
    if (event.key === 'ArrowLeft' && at > 0) show(at - 1)
    if (event.key === 'ArrowRight' && at < photos.length - 1) show(at + 1)
  })
}
