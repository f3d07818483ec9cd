import { send } from './process.js'

// Readers beside a fault test's writers: each loops over expensive reads (they run in the SQLite
// reader threads) until told to stop, and counts how they were answered.

const PATHS = ['/v3/plant?sort=-name&limit=100', '/v3/plant/count?status=available', '/v3/plant/changes?after=0&limit=500', '/v3/plant?q=plant&sort=price', '/v3/plant?tag=nope&sort=-updated']

export interface ReadStats {
  /** Answered 200. */
  ok: number
  /** Answered otherwise: the path, the status and the body. */
  other: string[]
  /** No answer: the connection refused or reset (the service had stopped, or died). */
  unanswered: number
}

export async function readLoad (url: string, readers: number, stopped: () => boolean): Promise<ReadStats> {
  const stats: ReadStats = { ok: 0, other: [], unanswered: 0 }
  await Promise.all(Array.from({ length: readers }, async (_, r) => {
    for (let i = r; !stopped(); i++) {
      const path = PATHS[i % PATHS.length]
      try {
        const res = await send(url, { method: 'GET', path })
        if (res.status === 200) stats.ok++
        else stats.other.push(`${path}: ${res.status} ${res.body}`)
      } catch {
        stats.unanswered++
        // Refused or reset: the service is going; the writers' loop decides when to stop.
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
  }))
  return stats
}
