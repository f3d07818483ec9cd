import type { PhaseContext } from './phase.js'
import { median, r2 } from './figures.js'
import { cpuMicros } from './process-cpu.js'

// The reservations phase, the `reservations` operation of `npm run bench` (a phase on a service of
// its own): the service's CPU (all threads, from /proc) for a checkout — a 3-line reservation and
// its commit, two requests — against one sale movement, in the same run, round by round; wanted:
// at most 4× (a checkout does three plants' work in two writes, a till one plant's in one).

export const RESERVATION_OPS = ['reservations'] as const

export interface ReservationRound { checkoutCpuUs: number, saleCpuUs: number, checkouts: number, sales: number, failures: number }
export interface ReservationFigures { engine: string, rounds: ReservationRound[], loadAverage: number[] }

/** Requests in flight at once (the bench's own process sends them; the service is what is measured). */
const PARALLEL = 8

async function post (url: string, body?: unknown): Promise<number> {
  const res = await fetch(url, { method: 'POST', headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  await res.arrayBuffer()
  return res.status
}

/** Runs `op` from PARALLEL workers for `seconds`; answers how many completed and how many failed. */
async function drive (seconds: number, op: () => Promise<boolean>): Promise<{ done: number, failures: number }> {
  const until = Date.now() + seconds * 1000
  let done = 0
  let failures = 0
  await Promise.all(Array.from({ length: PARALLEL }, async () => {
    while (Date.now() < until) {
      if (await op()) done++
      else failures++
    }
  }))
  return { done, failures }
}

export async function measureReservations (ctx: PhaseContext, loadavg: () => number[]): Promise<ReservationFigures> {
  const catalogue = await ctx.catalogue('reservations', ctx.small)
  const service = await ctx.startService('service@reservations', catalogue)
  const back = ctx.onLoadCore()
  try {
    // Plants 1–3 are the checkout's lines, 4 the till's: stock enough for every round.
    for (const id of [1, 2, 3, 4]) {
      const status = await post(`${service.url}/v3/plant/${id}/stock/movements`, { delta: 1_000_000_000, reason: 'received' })
      if (status !== 201) throw new Error(`reservations: receiving stock answered ${status}`)
    }
    const checkout = async (): Promise<boolean> => {
      const res = await fetch(`${service.url}/v3/reservations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ lines: [1, 2, 3].map((plant) => ({ plant, quantity: 1 })), ttlSeconds: 900 })
      })
      const body = await res.json() as { id?: string }
      if (res.status !== 201 || body.id === undefined) return false
      return await post(`${service.url}/v3/reservations/${body.id}/commit`) === 200
    }
    const sale = async (): Promise<boolean> => await post(`${service.url}/v3/plant/4/stock/movements`, { delta: -1, reason: 'sale' }) === 201
    await drive(ctx.warmSeconds, checkout)
    await drive(ctx.warmSeconds, sale)
    const rounds: ReservationRound[] = []
    for (let r = 0; r < ctx.rounds; r++) {
      // Alternating which goes first, so a drift in the machine's noise does not favour one side.
      const order = r % 2 === 0 ? ['checkout', 'sale'] as const : ['sale', 'checkout'] as const
      const round: Partial<ReservationRound> = { failures: 0 }
      for (const which of order) {
        const cpu = cpuMicros(service.child)
        const { done, failures } = await drive(ctx.seconds, which === 'checkout' ? checkout : sale)
        const perOp = (cpuMicros(service.child) - cpu) / Math.max(1, done)
        round.failures! += failures
        if (which === 'checkout') Object.assign(round, { checkoutCpuUs: Math.round(perOp), checkouts: done })
        else Object.assign(round, { saleCpuUs: Math.round(perOp), sales: done })
      }
      rounds.push(round as ReservationRound)
      ctx.log(`reservations round ${r + 1}: checkout (reserve 3 lines + commit) ${round.checkoutCpuUs} µs CPU each (${round.checkouts}); ` +
        `sale ${round.saleCpuUs} µs CPU each (${round.sales})${round.failures! > 0 ? `; failures ${round.failures}` : ''}`)
    }
    return { engine: ctx.engine, rounds, loadAverage: loadavg() }
  } finally {
    back()
    await service.stop()
  }
}

/** The reservations row: the ratio is the median of per-round ratios. */
export function reservationTable (f: ReservationFigures): string[] {
  const ratio = median(f.rounds.map((r) => r.checkoutCpuUs / r.saleCpuUs))
  const failures = f.rounds.reduce((n, r) => n + r.failures, 0)
  const m = (pick: (r: ReservationRound) => number): string => r2(median(f.rounds.map(pick)))
  return [
    '', `reservations (${f.engine}; load average ${f.loadAverage.map((x) => x.toFixed(2)).join(', ')}):`, '', '| target | wanted | measured | |', '|---|---|---|---|',
    `| service CPU, a checkout (3-line reservation + its commit) ÷ one sale movement | ≤ 4 | ${r2(ratio)} (${m((r) => r.checkoutCpuUs)} against ${m((r) => r.saleCpuUs)} µs; ` +
      `${m((r) => r.checkouts)} checkouts and ${m((r) => r.sales)} sales a round${failures > 0 ? `; ${failures} failures` : ''}) | ${Number.isFinite(ratio) && failures === 0 ? (ratio <= 4 ? 'met' : 'not met') : '-'} |`
  ]
}
