import { el } from './dom.js'

// Someone else changed the open plant: each field they changed is marked beside it (in words, not
// only a colour), until the plant is shown afresh, so staff see at once what moved under them.

const MARK = 'changed-elsewhere'

/** Marks each of `inputs` as just changed by someone else (a field already marked stays so). */
export function markChanged (inputs: HTMLElement[]): void {
  for (const input of inputs) {
    const id = `${input.id}-changed`
    if (document.getElementById(id) !== null) continue
    input.classList.add(MARK)
    input.after(el('p', { class: 'changed-mark', attrs: { id }, text: 'Just changed by someone else' }))
    input.setAttribute('aria-describedby', [input.getAttribute('aria-describedby'), id].filter(Boolean).join(' '))
  }
}

/** Takes every mark away. */
export function clearChanged (): void {
  for (const input of document.querySelectorAll<HTMLElement>(`.${MARK}`)) {
    const id = `${input.id}-changed`
    document.getElementById(id)?.remove()
    input.classList.remove(MARK)
    const rest = (input.getAttribute('aria-describedby') ?? '').split(' ').filter((ref) => ref !== '' && ref !== id)
    if (rest.length === 0) input.removeAttribute('aria-describedby')
    else input.setAttribute('aria-describedby', rest.join(' '))
  }
}

/** A field's name as its label shows it, without what follows in brackets ("Price (EUR)"). */
const labelOf = (input: HTMLElement): string => document.querySelector(`label[for="${input.id}"]`)?.textContent?.replace(/\s*\(.*\)\s*$/, '') ?? input.id

/** What the form says of a change from elsewhere to `inputs`; `kept`: staff's typing stays, their values are not in the form yet. */
export function changedWords (inputs: HTMLElement[], kept: boolean): string {
  const names = inputs.map(labelOf)
  const fields = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`
  return kept
    ? `Someone else just changed this plant: ${fields} (marked below). What you typed stays; Save shows their version beside yours.`
    : `Someone else just changed this plant: ${fields} (marked below). The form shows their version.`
}
