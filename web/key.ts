import { byId, say } from './dom.js'

// The API key lives in this tab's sessionStorage only: never in a URL, a cookie or localStorage,
// so closing the tab forgets it.
const STORAGE = 'plants.apiKey'

/** The server said writes need a key (filled into index.html by the service). */
export const keyRequired = document.documentElement.dataset.writeKey === 'required'

export function storedKey (): string | null {
  return sessionStorage.getItem(STORAGE)
}

export function forgetKey (): void {
  sessionStorage.removeItem(STORAGE)
  showForget()
}

const keyWatchers: Array<() => void> = []

/** Runs `watcher` whenever the tab's key is given, changed or forgotten (the settings view says which). */
export function onKeyChange (watcher: () => void): void {
  keyWatchers.push(watcher)
}

/** What the tab's key may do (GET /v3/keys/current): undefined while not known, or without a key. */
let scopes: string[] | undefined

/** Whether the tab's key may do what needs `scope`; true while that is not known (the service then says). */
export const keyMay = (scope: string): boolean => scopes === undefined || scopes.includes(scope)

/** Asks the service what the tab's key may do, so the page turns off the rest before staff try it. */
export async function learnScope (): Promise<void> {
  const key = storedKey()
  let learnt: string[] | undefined
  try {
    const res = key === null ? undefined : await fetch('/v3/keys/current', { headers: { authorization: `Bearer ${key}` }, cache: 'no-store' })
    if (res?.ok === true) learnt = (await res.json() as { scopes: string[] }).scopes
  } catch {}
  // Another key given meanwhile asked for itself.
  if (key !== storedKey()) return
  scopes = learnt
  for (const watcher of keyWatchers) watcher()
}

function showForget (): void {
  byId('forget-key').hidden = storedKey() === null
  scopes = undefined
  for (const watcher of keyWatchers) watcher()
  void learnScope()
}

/**
 * Asks for a key in a dialog; resolves with it (kept for the tab) or null when the person cancels.
 * `refused` says the last key was turned down.
 */
export function askKey (refused: boolean): Promise<string | null> {
  const dialog = byId<HTMLDialogElement>('key-dialog')
  const form = byId<HTMLFormElement>('key-form')
  const input = byId<HTMLInputElement>('key-input')
  say(byId('key-error'), refused ? 'Key refused: the catalogue did not accept this key. Check it and try again.' : '')
  input.value = ''
  input.setAttribute('aria-invalid', String(refused))
  return new Promise((resolve) => {
    const done = (key: string | null): void => {
      form.removeEventListener('submit', submit)
      dialog.removeEventListener('close', cancel)
      if (dialog.open) dialog.close()
      resolve(key)
    }
    const submit = (event: SubmitEvent): void => {
      event.preventDefault()
      const key = input.value.trim()
      if (key === '') {
        say(byId('key-error'), 'Enter the key, or cancel.')
        input.focus()
        return
      }
      sessionStorage.setItem(STORAGE, key)
      showForget()
      done(key)
    }
    // Not a close event left from the last time the dialog closed (it comes as a task, maybe after this opened it).
    const cancel = (): void => { if (!dialog.open) done(null) }
    form.addEventListener('submit', submit)
    dialog.addEventListener('close', cancel)
    dialog.showModal()
    input.focus()
  })
}

/** Staff said "Not now" to the key when opening a plant: asked again only when something is sent. */
let declined = false

/**
 * Asks for the key when staff begin something that will need it (opening a plant, adding one),
 * rather than after they typed it all; once declined, not again until a write needs it.
 */
export async function keyAtFirstNeed (): Promise<void> {
  if (!keyRequired || storedKey() !== null || declined) return
  if (await askKey(false) === null) declined = true
}

export function setUpKey (): void {
  showForget()
  byId('key-cancel').addEventListener('click', () => byId<HTMLDialogElement>('key-dialog').close())
  byId('forget-key').addEventListener('click', () => forgetKey())
}
