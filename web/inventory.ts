import { api, patiently, type Inventory } from './api.js'
import { byId } from './dom.js'

// The counts at the top, shown once the service has answered them.

let controller: AbortController | undefined

export async function loadCounts (): Promise<void> {
  controller?.abort()
  const mine = new AbortController()
  controller = mine
  try {
    // Asked again while the catalogue is busy: otherwise the counts would wait for the next change.
    const { body } = await patiently(() => api<Inventory>('GET', '/v3/store/inventory', { signal: mine.signal }), mine.signal)
    for (const key of ['available', 'pending', 'sold'] as const) byId(`count-${key}`).textContent = body[key].toLocaleString()
    byId('counts').hidden = false
  } catch {
    // The last counts stay shown: the next change or reload brings fresh ones.
  }
}
