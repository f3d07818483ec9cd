import { SORTS } from '../src/catalogue/query.js'
import type { Figures, Op } from './load.js'
import type { PhaseContext } from './phase.js'
import { barcodeFor, skuFor } from './plants.js'

// Reads that hold the service, a phase on a service of its own on each catalogue size (100,000 and 1,000,000 plants):
//   `probes`: /healthz, a plant by id and a write (PATCH status), one connection each, measured
//     quiet and then beside 4 anonymous connections looping over the most expensive reads the
//     API allows (load.ts HOLD_PATHS): their median within 2× the quiet one, their p99 within 2× the
//     quiet p99 or 50 ms, whichever is larger;
//   `sweep`: every filter the API offers, at a value that matches few or none and at one that
//     matches many, with every sort, one at a time on one connection: each answers 200, the slowest
//     p99 within 20× the p99 of an unfiltered first page (measured the same way, in the same run).
// The probes are measured again on a service of the same build with SQLITE_READERS=0 (every read
// on the event loop, as before the reader threads): what the threads change, in the same run.

export const READS_HOLD_OPS = ['reads-hold'] as const

const PROBES: Op[] = ['healthz', 'get', 'patch']
const HOLDERS = 4

/** Each offered filter, rare (few or no plants: bench/plants.ts) and common. */
function filters (plants: number): Array<[string, string]> {
  const id = Math.max(1, Math.floor(plants / 2))
  return [
    ['category, none', 'category=nope'], ['category, 1 in 5', 'category=fern'],
    ['status sold, 1 in 12', 'status=sold'], ['status available', 'status=available'],
    ['tag, none', 'tag=nope'], ['tag, 1 in 3', 'tag=rare'],
    ['q, one plant', `q=%23${id}`], ['q, 1 in 10', 'q=stera'],
    ['price, a cent wide', 'priceMin=199.97&priceMax=199.98'], ['price, 10 to 50', 'priceMin=10&priceMax=50'],
    ['updatedSince, future', 'updatedSince=2099-01-01T00:00:00Z'], ['updatedSince, all', 'updatedSince=2000-01-01T00:00:00Z'],
    ['sku', `sku=${skuFor(id)}`], ['barcode', `barcode=${barcodeFor(id - 1)}`]
  ]
}

export interface HoldProbe { op: Op, quiet: Figures, loaded: Figures, holders: Figures }
export interface SweepRow { filter: string, sort: string, figures: Figures }
export interface HoldFigures { plants: number, probes: HoldProbe[][], onLoop: HoldProbe[][], firstPage: Figures, sweep: SweepRow[], loadAverage: number[] }

async function measureProbes (ctx: PhaseContext, url: string, plants: number, label: string): Promise<HoldProbe[][]> {
  const job = { url, seconds: ctx.seconds, idMax: plants }
  await ctx.runLoad({ ...job, op: 'hold', connections: HOLDERS, seconds: ctx.warmSeconds })
  const rounds: HoldProbe[][] = []
  for (let r = 0; r < ctx.rounds; r++) {
    const round: HoldProbe[] = []
    for (const op of PROBES) {
      const quiet = await ctx.runLoad({ ...job, op, connections: 1 })
      const mixed = await ctx.runLoad({ ...job, op, connections: 1 + HOLDERS, mix: { op: 'hold', connections: HOLDERS } })
      round.push({ op, quiet, loaded: mixed, holders: mixed.mixed! })
      ctx.log(`${label} round ${r + 1} ${op}: quiet p50 ${quiet.p50} p99 ${quiet.p99} ms; beside ${HOLDERS} holders p50 ${mixed.p50} p99 ${mixed.p99} ms ` +
        `(holders ${mixed.mixed!.rps} req/s, p99 ${mixed.mixed!.p99} ms, non-2xx ${mixed.mixed!.non2xx})`)
    }
    rounds.push(round)
  }
  return rounds
}

export async function measureReadsHold (ctx: PhaseContext, sizes: number[], loadAverage: () => number[]): Promise<HoldFigures[]> {
  const out: HoldFigures[] = []
  for (const plants of sizes) {
    const catalogue = await ctx.catalogue(`hold-${plants}`, plants)
    const service = await ctx.startService(`service@hold-${plants}`, catalogue)
    let probes: HoldProbe[][], firstPage: Figures
    const sweep: SweepRow[] = []
    try {
      probes = await measureProbes(ctx, service.url, plants, `hold ${plants}`)
      const one = (path: string): Promise<Figures> =>
        ctx.runLoad({ url: service.url, op: 'path', paths: [path], connections: 1, seconds: Math.max(1, Math.round(ctx.seconds / 3)), idMax: plants })
      // The holders' reads still running on the reader threads (up to their deadline, at nice +10)
      // hold the address's read budget and the core for a while after their job ends: a first page
      // measured at once got 429 or waited its whole job for its one untimed answer, and recorded
      // none. It is asked for until that tail is over, then measured.
      await ctx.runLoad({ url: service.url, op: 'path', paths: ['/v3/plant?limit=20'], connections: 1, seconds: ctx.warmSeconds, idMax: plants })
      firstPage = await one('/v3/plant?limit=20')
      if (firstPage.non2xx + firstPage.errors > 0 || firstPage.requests < 2) ctx.log(`hold ${plants} first page: ${firstPage.requests} requests, non-2xx ${firstPage.non2xx}, errors ${firstPage.errors}`)
      for (const [filter, query] of filters(plants)) {
        for (const sort of SORTS) {
          const figures = await one(`/v3/plant?limit=20&${query}&sort=${sort}`)
          sweep.push({ filter, sort, figures })
          if (figures.non2xx + figures.errors > 0 || figures.p99 > 20 * firstPage.p99) ctx.log(`hold ${plants} sweep ${filter} sort=${sort}: p99 ${figures.p99} ms, non-2xx ${figures.non2xx}, errors ${figures.errors}`)
        }
      }
    } finally {
      await service.stop()
    }
    const looped = await ctx.startService(`service@hold-${plants}-on-loop`, catalogue, { SQLITE_READERS: '0' })
    try {
      const onLoop = await measureProbes(ctx, looped.url, plants, `hold ${plants} SQLITE_READERS=0`)
      out.push({ plants, probes, onLoop, firstPage, sweep, loadAverage: loadAverage() })
    } finally {
      await looped.stop()
    }
  }
  return out
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const verdict = (ok: boolean): string => ok ? 'met' : '**not met**'

function probeRow (label: string, rows: HoldProbe[]): string {
  const quiet50 = median(rows.map((p) => p.quiet.p50))
  const loaded50 = median(rows.map((p) => p.loaded.p50))
  const quiet99 = median(rows.map((p) => p.quiet.p99))
  const loaded99 = median(rows.map((p) => p.loaded.p99))
  const bound = Math.max(2 * quiet99, 50)
  const ratio = loaded50 / quiet50
  return `| ${label} (median of ${rows.length} rounds) | ${quiet50} | ${loaded50} | ${ratio.toFixed(2)} | ${quiet99} | ${loaded99} | ${bound.toFixed(1)} | ${verdict(ratio <= 2 && loaded99 <= bound)} |`
}

export function holdTable (figures: HoldFigures[]): string[] {
  const lines: string[] = []
  for (const f of figures) {
    lines.push('', `| reads that hold, ${f.plants.toLocaleString('en')} plants (load average ${f.loadAverage.map((x) => x.toFixed(2)).join(', ')}) | quiet p50 | beside ${HOLDERS} holders p50 | ratio (≤ 2) | quiet p99 | beside p99 | bound | |`,
      '|---|--:|--:|--:|--:|--:|--:|---|')
    for (const [label, probes] of [['', f.probes], [', SQLITE_READERS=0', f.onLoop]] as const) {
      for (const op of PROBES) lines.push(probeRow(`${op}${label}`, probes.map((round) => round.find((p) => p.op === op)!)))
    }
    const holders = f.probes.flat().map((p) => p.holders)
    lines.push(`| the holders: req/s (median), non-2xx in all | ${median(holders.map((h) => h.rps))} | | | | ${median(holders.map((h) => h.p99))} | | ${holders.reduce((n, h) => n + h.non2xx + h.errors, 0)} |`)
    const slowest = f.sweep.reduce((a, b) => (b.figures.p99 > a.figures.p99 ? b : a))
    // A row whose one answer took its whole job has no timed answer (its first is not timed): no p99, and not 200 in time.
    const failed = f.sweep.filter((s) => s.figures.non2xx + s.figures.errors > 0 || !Number.isFinite(s.figures.p99))
    lines.push('', `| sweep, ${f.plants.toLocaleString('en')} plants: ${f.sweep.length} filter × sort | p99 ms | × first page p99 (${f.firstPage.p99} ms) | |`, '|---|--:|--:|---|',
      `| slowest: ${slowest.filter}, sort=${slowest.sort} | ${slowest.figures.p99} | ${(slowest.figures.p99 / f.firstPage.p99).toFixed(1)} (≤ 20) | ${verdict(slowest.figures.p99 <= 20 * f.firstPage.p99)} |`,
      `| answers other than 200 | ${failed.length === 0 ? 'none' : failed.map((s) => `${s.filter} sort=${s.sort}`).join('; ')} | | ${verdict(failed.length === 0)} |`,
      `| the first page: answers, non-2xx | ${f.firstPage.requests}, ${f.firstPage.non2xx + f.firstPage.errors} | | ${verdict(f.firstPage.non2xx + f.firstPage.errors === 0 && f.firstPage.requests > 1)} |`)
  }
  return lines
}
