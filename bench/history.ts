import type { Figures } from './load.js'
import type { PhaseContext } from './phase.js'
import { median, r2 } from './figures.js'
import { HISTORY_PLANTS } from './history-plants.js'

// The history target, the `history-1` and `history-1000` operations of `npm run bench`, a
// phase on a service of its own: GET /v3/plant/{id}/history (a first page, 20 versions) of a plant
// with 1 version against one with 1,000, each at the run's connections, round by round; wanted:
// the p99 of the second at most 3× the first's (a page costs the same whatever the plant's past).

export const HISTORY_OPS = ['history-1', 'history-1000'] as const
const VERSIONS = 1000
const STATUSES = ['available', 'pending', 'sold']

export interface HistoryRound { one: Figures, many: Figures }
export interface HistoryFigures { versions: number, rounds: HistoryRound[] }

export async function measureHistory (ctx: PhaseContext): Promise<HistoryFigures> {
  const catalogue = await ctx.catalogue('history', ctx.small)
  const service = await ctx.startService('service@history', catalogue)
  try {
    const id = HISTORY_PLANTS['history-1000']
    // One PATCH at a time, each a real change (the status moves on), as a plant's life would make them.
    for (let v = 1; v < VERSIONS; v++) {
      const res = await fetch(`${service.url}/v3/plant/${id}`, {
        method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ status: STATUSES[v % 3] })
      })
      if (!res.ok) throw new Error(`history: PATCH /v3/plant/${id} answered ${res.status}: ${await res.text()}`)
      await res.arrayBuffer()
    }
    const page = await (await fetch(`${service.url}/v3/plant/${id}/history?limit=1`)).json() as { items: Array<{ version: number }> }
    if (page.items[0]?.version !== VERSIONS) throw new Error(`history: plant ${id}'s newest version is ${page.items[0]?.version}, not ${VERSIONS}`)
    const job = { url: service.url, seconds: ctx.seconds, connections: ctx.connections, idMax: ctx.small }
    for (const op of HISTORY_OPS) await ctx.runLoad({ ...job, op, seconds: ctx.warmSeconds })
    const rounds: HistoryRound[] = []
    for (let r = 0; r < ctx.rounds; r++) {
      const one = await ctx.runLoad({ ...job, op: 'history-1' })
      const many = await ctx.runLoad({ ...job, op: 'history-1000' })
      rounds.push({ one, many })
      ctx.log(`history round ${r + 1}: 1 version ${one.rps} req/s p99 ${one.p99} ms; ${VERSIONS} versions ${many.rps} req/s p99 ${many.p99} ms` +
        (one.non2xx + one.errors + many.non2xx + many.errors > 0 ? `; failures ${one.non2xx + one.errors}/${many.non2xx + many.errors}` : ''))
    }
    return { versions: VERSIONS, rounds }
  } finally {
    await service.stop()
  }
}

/** The history row: the p99 ratio is the median of per-round ratios. */
export function historyTable (f: HistoryFigures): string[] {
  const ratio = median(f.rounds.map((r) => r.many.p99 / r.one.p99))
  const m = (pick: (r: HistoryRound) => number): string => r2(median(f.rounds.map(pick)))
  return [
    '', 'history:', '', '| target | wanted | measured | |', '|---|---|---|---|',
    `| history page p99, plant of ${f.versions} versions ÷ plant of 1 | ≤ 3 | ${r2(ratio)} (${m((r) => r.many.p99)} ms against ${m((r) => r.one.p99)} ms; ` +
      `${m((r) => r.many.rps)} against ${m((r) => r.one.rps)} req/s) | ${Number.isFinite(ratio) ? (ratio <= 3 ? 'met' : 'not met') : '-'} |`
  ]
}
