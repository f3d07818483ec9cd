import { performance } from 'node:perf_hooks'
import type { Figures, Job } from './load.js'
import type { PhaseContext, PhaseService } from './phase.js'
import { median, r2 } from './figures.js'

// Stock's phase (issue 49), the `stock` operation of `npm run bench` (or one part of it:
// `stock-sale`, `stock-hot`, `stock-count`), each part on services of its own, each figure a ratio
// to a baseline measured in the same rounds:
//   sale:  a till's sale (POST …/stock/movements, delta -1, an Idempotency-Key of its own each) against
//          PATCH {status} of the same plants at the same connections; wanted ≥ 0.9× its req/s;
//   hot:   64 tills all selling one plant (one hot row) against 64 tills each selling its own plant;
//          wanted ≥ 0.5× its sales/s;
//   count: GET /v3/plant/count?inStock=true and ?lowStock=true on a catalogue whose every plant tracks
//          stock, at `big` plants (1,000,000) against the small one (1,000); wanted p99 ≤ 3×.
// Stock is put on the plants through the store's own movements (a count each), in groups that share
// one commit, as the plants themselves are preloaded through store.create.

export const STOCK_PARTS = ['sale', 'hot', 'count'] as const
export type StockPart = typeof STOCK_PARTS[number]
export const STOCK_OPS = ['stock', ...STOCK_PARTS.map((p) => `stock-${p}`)] as const

/** The parts `--ops` names: `stock` is all of them. */
export const stockParts = (ops: string[]): StockPart[] => STOCK_PARTS.filter((p) => ops.includes('stock') || ops.includes(`stock-${p}`))

const TILLS = 64
/** Every plant the sale and hot parts sell holds this many at main: no round runs out. */
const PLENTY = 100_000_000
/** The count part's plants: every one tracks stock, one in 50 none available, a threshold of 3 on each (8 % low). */
const LOW_STOCK_AT = 3
const countOnHand = (i: number): number => i % 50
const COUNT_PATHS = ['/v3/plant/count?inStock=true', '/v3/plant/count?lowStock=true'] as const

export interface PairRound { base: Figures, measured: Figures }
export interface CountRound { small: Figures[], big: Figures[] }
export interface StockFigures {
  engine: string
  connections: number
  sale?: { plants: number, rounds: PairRound[], loadAverage: number[] }
  hot?: { rounds: PairRound[], loadAverage: number[] }
  count?: { small: number, big: number, stockRate: { small: number, big: number }, rounds: CountRound[], loadAverage: number[] }
}

/** Every plant 1..plants counted to `onHand(i)` at main through the store's movements; answers movements/s. */
async function stockUp (ctx: PhaseContext, catalogue: Record<string, string>, plants: number, onHand: (i: number) => number): Promise<number> {
  const store = await ctx.openStore(catalogue)
  // A chunk's movements reach the store together; PostgreSQL writes them as a group set-based
  // (src/store/postgres/move-group.ts: BEGIN, two statements and COMMIT, however many), one
  // transaction whose statements grow with the chunk: 200 there, the size the phase's figures were
  // taken with (the bench's store waits a minute for a commit: run.ts openBenchStore).
  const chunk = ctx.engine === 'postgres' ? 200 : 10_000
  const started = performance.now()
  try {
    for (let from = 0; from < plants; from += chunk) {
      const moves: Array<Promise<unknown>> = []
      for (let i = from; i < Math.min(plants, from + chunk); i++) moves.push(store.stock.move(i + 1, { set: onHand(i), reason: 'count' }))
      await Promise.all(moves)
      if ((from + chunk) % 100_000 === 0) ctx.log(`  stock on ${from + chunk} plants`)
    }
  } finally {
    await store.close()
  }
  return Math.round(plants / ((performance.now() - started) / 1000))
}

/** Rounds of two jobs on one service, alternating which goes first so a drift in the noise favours neither. */
async function pairRounds (ctx: PhaseContext, label: string, base: Job, measured: Job): Promise<PairRound[]> {
  for (const job of [base, measured]) await ctx.runLoad({ ...job, seconds: ctx.warmSeconds })
  const rounds: PairRound[] = []
  for (let r = 0; r < ctx.rounds; r++) {
    const [first, second] = r % 2 === 0 ? [base, measured] : [measured, base]
    const a = await ctx.runLoad(first)
    const b = await ctx.runLoad(second)
    const round = first === base ? { base: a, measured: b } : { base: b, measured: a }
    rounds.push(round)
    const failures = round.base.non2xx + round.base.errors + round.measured.non2xx + round.measured.errors
    ctx.log(`${label} round ${r + 1}: ${round.measured.rps} req/s p99 ${round.measured.p99} ms against ${round.base.rps} req/s p99 ${round.base.p99} ms` +
      (failures > 0 ? `; failures ${failures}` : ''))
  }
  return rounds
}

async function withService<T> (ctx: PhaseContext, name: string, catalogue: Record<string, string>, env: Record<string, string>, run: (s: PhaseService) => Promise<T>): Promise<T> {
  const service = await ctx.startService(name, catalogue, env)
  try {
    return await run(service)
  } finally {
    await service.stop()
  }
}

export async function measureStock (ctx: PhaseContext, parts: StockPart[], big: number, loadavg: () => number[]): Promise<StockFigures> {
  const out: StockFigures = { engine: ctx.engine, connections: ctx.connections }
  if (parts.includes('sale') || parts.includes('hot')) {
    const catalogue = await ctx.catalogue('stock-sale', ctx.small)
    ctx.log(`stock: ${PLENTY} pots on each of ${ctx.small} plants at ${await stockUp(ctx, catalogue, ctx.small, () => PLENTY)} movements/s`)
    await withService(ctx, 'service@stock-sale', catalogue, {}, async (service) => {
      const job = { url: service.url, seconds: ctx.seconds }
      if (parts.includes('sale')) {
        const rounds = await pairRounds(ctx, 'stock sale ÷ PATCH',
          { ...job, op: 'patch', connections: ctx.connections, idMax: ctx.small },
          { ...job, op: 'sale', connections: ctx.connections, idMax: ctx.small })
        out.sale = { plants: ctx.small, rounds, loadAverage: loadavg() }
      }
      if (parts.includes('hot')) {
        const rounds = await pairRounds(ctx, `stock ${TILLS} tills on 1 plant ÷ on ${TILLS}`,
          { ...job, op: 'till', connections: TILLS, idMax: TILLS },
          { ...job, op: 'till', connections: TILLS, idMax: 1 })
        out.hot = { rounds, loadAverage: loadavg() }
      }
    })
  }
  if (parts.includes('count')) {
    const fields = (): object => ({ lowStockAt: LOW_STOCK_AT })
    const small = await ctx.catalogue('stock-count-small', ctx.small, fields)
    const smallRate = await stockUp(ctx, small, ctx.small, countOnHand)
    const large = await ctx.catalogue('stock-count-big', big, fields)
    ctx.log(`stock: counting ${big} plants through the store…`)
    const bigRate = await stockUp(ctx, large, big, countOnHand)
    ctx.log(`stock: ${big} plants counted at ${bigRate} movements/s`)
    // Counts are expensive reads, each address's share bounded (READ_BUDGET): the generator's connections stand for as many clients.
    const env = { READ_BUDGET: String(ctx.connections) }
    await withService(ctx, 'service@stock-count-small', small, env, async (s) => {
      await withService(ctx, `service@stock-count-${big}`, large, env, async (b) => {
        const job = (url: string, path: string): Job => ({ url, op: 'path', paths: [path], connections: ctx.connections, seconds: ctx.seconds, idMax: 1 })
        for (const path of COUNT_PATHS) for (const url of [s.url, b.url]) await ctx.runLoad({ ...job(url, path), seconds: ctx.warmSeconds })
        const rounds: CountRound[] = []
        for (let r = 0; r < ctx.rounds; r++) {
          const round: CountRound = { small: [], big: [] }
          for (const path of COUNT_PATHS) {
            round.small.push(await ctx.runLoad(job(s.url, path)))
            round.big.push(await ctx.runLoad(job(b.url, path)))
          }
          rounds.push(round)
          ctx.log(`stock count round ${r + 1}: ` + COUNT_PATHS.map((p, k) => `${p} p99 ${round.small[k].p99} → ${round.big[k].p99} ms` +
            (round.small[k].non2xx + round.big[k].non2xx + round.small[k].errors + round.big[k].errors > 0 ? ' (failures)' : '')).join('; '))
        }
        out.count = { small: ctx.small, big, stockRate: { small: smallRate, big: bigRate }, rounds, loadAverage: loadavg() }
      })
    })
  }
  return out
}

const verdict = (ok: boolean, x: number): string => Number.isFinite(x) ? (ok ? 'met' : '**not met**') : '-'
const failures = (fs: Figures[]): number => fs.reduce((n, f) => n + f.non2xx + f.errors, 0)
const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(', ')

/** The stock rows: every ratio the median of per-round ratios. */
export function stockTable (f: StockFigures): string[] {
  const lines = ['', `stock (${f.engine}):`, '', '| target | wanted | measured | |', '|---|---|---|---|']
  const pair = (rounds: PairRound[], pick: (x: Figures) => number): { ratio: number, m: number, b: number } => ({
    ratio: median(rounds.map((r) => pick(r.measured) / pick(r.base))), m: median(rounds.map((r) => pick(r.measured))), b: median(rounds.map((r) => pick(r.base)))
  })
  if (f.sale) {
    const { ratio, m, b } = pair(f.sale.rounds, (x) => x.rps)
    const p99 = pair(f.sale.rounds, (x) => x.p99)
    const failed = failures(f.sale.rounds.flatMap((r) => [r.base, r.measured]))
    lines.push(`| sale (a fresh Idempotency-Key each) req/s ÷ PATCH {status} req/s, ${f.connections} connections, ${f.sale.plants} plants | ≥ 0.9 | ${r2(ratio)} ` +
      `(${r2(m)} against ${r2(b)} req/s; p99 ${r2(p99.m)} against ${r2(p99.b)} ms${failed > 0 ? `; ${failed} failures` : ''}; load ${load(f.sale.loadAverage)}) | ${verdict(ratio >= 0.9, ratio)} |`)
  }
  if (f.hot) {
    const { ratio, m, b } = pair(f.hot.rounds, (x) => x.rps)
    const p99 = pair(f.hot.rounds, (x) => x.p99)
    const failed = failures(f.hot.rounds.flatMap((r) => [r.base, r.measured]))
    lines.push(`| ${TILLS} tills selling 1 plant ÷ ${TILLS} tills selling ${TILLS} plants, sales/s | ≥ 0.5 | ${r2(ratio)} ` +
      `(${r2(m)} against ${r2(b)} sales/s; p99 ${r2(p99.m)} against ${r2(p99.b)} ms${failed > 0 ? `; ${failed} failures` : ''}; load ${load(f.hot.loadAverage)}) | ${verdict(ratio >= 0.5, ratio)} |`)
  }
  if (f.count) {
    const c = f.count
    COUNT_PATHS.forEach((path, k) => {
      const ratio = median(c.rounds.map((r) => r.big[k].p99 / r.small[k].p99))
      const failed = failures(c.rounds.flatMap((r) => [r.small[k], r.big[k]]))
      lines.push(`| \`${path}\` p99, ${c.big.toLocaleString('en')} tracked plants ÷ ${c.small.toLocaleString('en')} | ≤ 3 | ${r2(ratio)} ` +
        `(${r2(median(c.rounds.map((r) => r.big[k].p99)))} against ${r2(median(c.rounds.map((r) => r.small[k].p99)))} ms; ` +
        `${r2(median(c.rounds.map((r) => r.big[k].rps)))} against ${r2(median(c.rounds.map((r) => r.small[k].rps)))} req/s${failed > 0 ? `; ${failed} failures` : ''}) | ${verdict(ratio <= 3, ratio)} |`)
    })
    lines.push('', `count: stock put on through the store's movements at ${c.stockRate.small} (${c.small}) and ${c.stockRate.big} (${c.big}) movements/s; load ${load(c.loadAverage)}`)
  }
  return lines
}
