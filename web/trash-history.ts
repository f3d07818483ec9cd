import { byId } from './dom.js'
import { listParts, VersionList } from './history.js'

// A deleted plant's history, read from its row in the trash (the service keeps it while the plant
// is there): who changed what and when, to read only; going back is for plants in the list.

const dialog = byId<HTMLDialogElement>('trash-history')
const versions = new VersionList(listParts('trash-history'))
let opener: HTMLElement | undefined

/** Shows plant `id`'s versions in their dialog; focus goes back to `from` when it closes. */
export function showTrashHistory (id: number, name: string, from: HTMLElement): void {
  opener = from
  byId('trash-history-title').textContent = `History of “${name}”`
  versions.clear()
  dialog.showModal()
  void versions.load(id, 'first')
}

dialog.addEventListener('close', () => {
  versions.clear()
  if (opener?.isConnected === true) opener.focus()
})
