import type { PlantClient } from '../client/plant-client.js'
import type { StockReader } from './target-interface.js'
import { mainFirst } from './locations.js'

// An export's stock columns through a running service (--url): GET /v3/locations once, then
// GET /v3/plant/{id}/stock for each tracked plant of a page, a few at a time (one request a plant:
// the API has no levels of many plants at once).

/** How the service catalogue reads: with its retries, its failures worded as its own. */
export type Read = <T>(attempt: () => Promise<{ data?: T, error?: unknown, response: Response }>) => Promise<T>

const AT_ONCE = 8

export function serviceStock (client: PlantClient, read: Read): StockReader {
  return {
    locations: async () => mainFirst((await read(async () => client.GET('/v3/locations'))).items.map((l) => l.name)),
    onHand: async (ids) => {
      const levels = new Map<number, Map<string, number>>()
      for (let i = 0; i < ids.length; i += AT_ONCE) {
        await Promise.all(ids.slice(i, i + AT_ONCE).map(async (id) => {
          const { items } = await read(async () => client.GET('/v3/plant/{id}/stock', { params: { path: { id } } }))
          levels.set(id, new Map(items.map((l) => [l.location, l.onHand])))
        }))
      }
      return levels
    }
  }
}
