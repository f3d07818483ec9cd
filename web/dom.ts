// Building DOM from data without ever parsing data as HTML: text goes in as text nodes.

type Props = { class?: string, attrs?: Record<string, string>, text?: string }

/** A new element; strings among the children become text nodes, never markup. */
export function el<K extends keyof HTMLElementTagNameMap> (tag: K, props: Props = {}, ...children: Array<Node | string>): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  if (props.class !== undefined) node.className = props.class
  for (const [name, value] of Object.entries(props.attrs ?? {})) node.setAttribute(name, value)
  if (props.text !== undefined) node.textContent = props.text
  node.append(...children)
  return node
}

/** The element with this id, of the expected kind (a missing one is a defect of index.html). */
export function byId<T extends HTMLElement = HTMLElement> (id: string): T {
  const node = document.getElementById(id)
  if (node === null) throw new Error(`#${id} is missing from the page`)
  return node as T
}

/** Shows `text` in `node`, hiding it when there is nothing to say. */
export function say (node: HTMLElement, text: string): void {
  node.textContent = text
  node.hidden = text === ''
}

export interface Debounced {
  (): void
  /** Forgets the call waiting, if any. */
  cancel (): void
  /** Runs the call waiting now, if any. */
  flush (): void
}

/** Runs `fn` once `ms` have passed without another call. */
export function debounce (fn: () => void, ms: number): Debounced {
  let timer: number | undefined
  const run = (() => {
    window.clearTimeout(timer)
    timer = window.setTimeout(() => {
      timer = undefined
      fn()
    }, ms)
  }) as Debounced
  run.cancel = () => {
    window.clearTimeout(timer)
    timer = undefined
  }
  run.flush = () => {
    if (timer === undefined) return
    run.cancel()
    fn()
  }
  return run
}

/**
 * Runs `fn` at once for a call that follows a pause of more than `ms`, and otherwise once the calls
 * pause for `ms`: a person's keys in a filter box are each answered as they are typed (the list's
 * newest request aborts the one before it), while a burst (a barcode scanner, a held key) is
 * answered once, when it ends.
 */
export function eager (fn: () => void, ms: number): Debounced {
  let last = -Infinity
  const later = debounce(fn, ms)
  const run = (() => {
    const now = performance.now()
    const paused = now - last > ms
    last = now
    if (paused) {
      later.cancel()
      fn()
    } else {
      later()
    }
  }) as Debounced
  run.cancel = later.cancel
  run.flush = later.flush
  return run
}

/**
 * Asks before something that cannot be undone, in the page's confirmation dialog (Cancel has the
 * focus, so Enter does no harm); resolves true when the person chose `action`. Given `beside` (the
 * thing it names, a photo), the dialog is placed above or below it rather than over it.
 */
export async function confirmFirst (title: string, text: string, action: string, beside?: HTMLElement, cancel = 'Cancel'): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>('confirm')
  byId('confirm-title').textContent = title
  byId('confirm-text').textContent = text
  byId('confirm-delete').textContent = action
  byId('confirm-cancel').textContent = cancel
  dialog.returnValue = ''
  beside?.scrollIntoView({ block: 'nearest' })
  beside?.classList.add('named')
  dialog.classList.toggle('beside', beside !== undefined)
  dialog.showModal()
  if (beside !== undefined) placeBeside(dialog, beside)
  byId('confirm-cancel').focus()
  const answer = await new Promise<string>((resolve) => {
    // A close event comes as a task: one left from an earlier question is not this one's answer.
    const closed = (): void => {
      if (dialog.open) return
      dialog.removeEventListener('close', closed)
      resolve(dialog.returnValue)
    }
    dialog.addEventListener('close', closed)
  })
  beside?.classList.remove('named')
  dialog.style.removeProperty('margin-top')
  dialog.classList.remove('beside')
  return answer === 'delete'
}

/** Puts the open `dialog` below `target` when it fits there, else above it, else on the side with more room. */
function placeBeside (dialog: HTMLDialogElement, target: HTMLElement): void {
  const gap = 12
  const { top, bottom } = target.getBoundingClientRect()
  const height = dialog.getBoundingClientRect().height
  const room = window.innerHeight
  const below = bottom + gap
  const above = top - gap - height
  const at = below + height <= room - gap ? below : above >= gap ? above : room - bottom > top ? room - height - gap : gap
  dialog.style.marginTop = `${Math.max(gap, at)}px`
}

// The page's waits (ms), each as staff need it. Only a test sets others, through
// `window.plantsTimings` set before the page's scripts run; each wait reads it when it starts.
const WAITS = {
  /** An empty list, after a key, waits this long for the next before "No plant matches". */
  holdEmptyMs: 500,
  /** The rows on screen are read again once changes pause this long. */
  refreshMs: 150,
  /** A closed select's choice loads the list once it rests this long. */
  settleMs: 400,
  /** The live feed, dropped, is opened again after this long. */
  liveRetryMs: 2000,
  /** A busy read (429, 503) is asked again after Retry-After (else 1) times this, doubling. */
  retryMs: 1000,
  /** The message at the foot of the window, without an Undo, shows this long. */
  messageMs: 6000
}

export type Timings = typeof WAITS

/** The wait `name`: as a test set it (a number, 0 or more), else staff's. */
export function timing (name: keyof Timings): number {
  const asked = (window as Window & { plantsTimings?: Partial<Timings> }).plantsTimings?.[name]
  return typeof asked === 'number' && Number.isFinite(asked) && asked >= 0 ? asked : WAITS[name]
}
