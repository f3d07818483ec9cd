import { randomBytes } from 'node:crypto'
import type { Figures } from './load.js'
import type { PhaseContext } from './phase.js'
import { median, r2 } from './figures.js'

// The key target, the `keys` operation of `npm run bench`, a phase on a service of its own:
// GET by id sent with a key of the database (scope read, made through POST /v3/keys) against the
// same GET sent with an API_KEYS key, round by round; wanted: the first at least 0.95× the
// second's req/s (a named key costs a cached lookup, no more). Reads stay public (the bench's
// start-up probe reads without a key), and a key sent with a public read is checked all the same.

export const KEY_OPS = ['keys'] as const

export interface KeyRound { env: Figures, scoped: Figures }
export interface KeyFigures { rounds: KeyRound[] }

export async function measureKeys (ctx: PhaseContext): Promise<KeyFigures> {
  const envKey = randomBytes(24).toString('hex')
  const catalogue = await ctx.catalogue('keys', ctx.small)
  const service = await ctx.startService('service@keys', catalogue, { API_KEYS: envKey })
  try {
    const made = await fetch(`${service.url}/v3/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${envKey}` },
      body: JSON.stringify({ name: 'shop-front', scope: 'read' })
    })
    if (made.status !== 201) throw new Error(`keys: POST /v3/keys answered ${made.status}: ${await made.text()}`)
    const { secret } = await made.json() as { secret: string }
    const job = { url: service.url, op: 'get' as const, seconds: ctx.seconds, connections: ctx.connections, idMax: ctx.small }
    const env = { authorization: `Bearer ${envKey}` }
    const scoped = { authorization: `Bearer ${secret}` }
    for (const headers of [env, scoped]) await ctx.runLoad({ ...job, headers, seconds: ctx.warmSeconds })
    const rounds: KeyRound[] = []
    for (let r = 0; r < ctx.rounds; r++) {
      // Alternating which goes first, so a drift in the machine's noise does not favour one side.
      const [first, second] = r % 2 === 0 ? [env, scoped] : [scoped, env]
      const a = await ctx.runLoad({ ...job, headers: first })
      const b = await ctx.runLoad({ ...job, headers: second })
      const round = first === env ? { env: a, scoped: b } : { env: b, scoped: a }
      rounds.push(round)
      const failures = round.env.non2xx + round.env.errors + round.scoped.non2xx + round.scoped.errors
      ctx.log(`keys round ${r + 1}: GET with an API_KEYS key ${round.env.rps} req/s p99 ${round.env.p99} ms; with a read key ${round.scoped.rps} req/s p99 ${round.scoped.p99} ms` +
        (failures > 0 ? `; failures ${failures}` : ''))
    }
    return { rounds }
  } finally {
    await service.stop()
  }
}

/** The key row: the ratio is the median of per-round ratios. */
export function keyTable (f: KeyFigures): string[] {
  const ratio = median(f.rounds.map((r) => r.scoped.rps / r.env.rps))
  const m = (pick: (r: KeyRound) => number): string => r2(median(f.rounds.map(pick)))
  const failures = f.rounds.reduce((n, r) => n + r.env.non2xx + r.env.errors + r.scoped.non2xx + r.scoped.errors, 0)
  return [
    '', 'keys:', '', '| target | wanted | measured | |', '|---|---|---|---|',
    `| GET by id req/s, a read key of the database ÷ an API_KEYS key | ≥ 0.95 | ${r2(ratio)} (${m((r) => r.scoped.rps)} against ${m((r) => r.env.rps)} req/s; ` +
      `p99 ${m((r) => r.scoped.p99)} against ${m((r) => r.env.p99)} ms${failures > 0 ? `; ${failures} failures` : ''}) | ${Number.isFinite(ratio) && failures === 0 ? (ratio >= 0.95 ? 'met' : 'not met') : '-'} |`
  ]
}
