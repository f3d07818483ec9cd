import { api, ApiError, type Inventory } from './api.js'
import { byId } from './dom.js'

// The counts at the top. A service without the inventory (an older one) simply shows none.

let controller: AbortController | undefined

export async function loadCounts (): Promise<void> {
  controller?.abort()
  const mine = new AbortController()
  controller = mine
  try {
    const { body } = await api<Inventory>('GET', '/v3/store/inventory', { signal: mine.signal })
    for (const key of ['available', 'pending', 'sold'] as const) byId(`count-${key}`).textContent = body[key].toLocaleString()
    byId('counts').hidden = false
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) byId('counts').hidden = true
    // Anything else keeps the last counts shown: the next change or reload brings them back.
  }
}
