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

/** Runs `fn` once `ms` have passed without another call. */
export function debounce (fn: () => void, ms: number): () => void {
  let timer: number | undefined
  return () => {
    window.clearTimeout(timer)
    timer = window.setTimeout(fn, ms)
  }
}

/**
 * Asks before something that cannot be undone, in the page's confirmation dialog (Cancel has the
 * focus, so Enter does no harm); resolves true when the person chose `action`.
 */
export async function confirmFirst (title: string, text: string, action: string): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>('confirm')
  byId('confirm-title').textContent = title
  byId('confirm-text').textContent = text
  byId('confirm-delete').textContent = action
  dialog.returnValue = ''
  dialog.showModal()
  byId('confirm-cancel').focus()
  const answer = await new Promise<string>((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue), { once: true }))
  return answer === 'delete'
}
