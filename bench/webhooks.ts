import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { BATCH_PLANTS, type Figures } from './load.js'
import type { PhaseContext, PhaseService } from './phase.js'
import { plantFor } from './plants.js'
import { median, r2 } from './figures.js'
import { charged } from './process-cpu.js'

// The webhooks' measured targets, the `webhooks` phase of `npm run bench`, on services of their own
// with WEBHOOK_ALLOW_PRIVATE=true; every receiver is a node:http server on loopback in the bench's
// own process (fast: 204 at once; slow: 204 after 200 ms; dead: takes the request, never answers,
// so each attempt waits for the service's 10 s limit):
//   1. POST req/s with 3 subscriptions (fast, slow, dead) against none: one service, each round
//      measured without subscriptions and with three made for the round (and removed after it, so
//      no backlog is carried into the next round), in turn first and second, with the service's
//      CPU a POST beside the rate;
//   2. 10,000 changes (batches of 100) reach a fast receiver: how long after the last commit (the
//      last batch answered) the receiver has all of them;
//   3. the delivery lag while writes run at 1,000/s (single POSTs, paced): each plant's name carries
//      the time its POST was sent, so the lag is arrival minus sending (an upper bound of commit to
//      arrival), median and p99 per round;
//   4. peak RSS of a service with 100 subscriptions, 50 fast and 50 dead, against one with none, both
//      under the same POST rounds.

export const WEBHOOK_OPS = ['webhooks'] as const
const BURST = 10_000
const PACED_RATE = 1000
const MANY = 100

interface Receiver { url: string, received: number, close: () => Promise<void> }
type Kind = 'fast' | 'slow' | 'dead'

/** A receiver on loopback; `onChange` is given each change and the time (ms, performance clock) it arrived. */
async function receiver (kind: Kind, onChange?: (change: { seq: number, plant: { name: string } | null }, at: number) => void): Promise<Receiver> {
  const sockets = new Set<Socket>()
  const r: Receiver = { url: '', received: 0, close: async () => {} }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const at = performance.now()
      r.received++
      if (onChange) onChange(JSON.parse(Buffer.concat(chunks).toString()), at)
      if (kind === 'fast') res.writeHead(204).end()
      else if (kind === 'slow') setTimeout(() => res.writeHead(204).end(), 200)
      // dead: nothing, until the service gives up on it
    })
  })
  server.keepAliveTimeout = 60_000
  server.on('connection', (s: Socket) => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  r.close = async () => {
    for (const s of sockets) s.destroy()
    await new Promise((resolve) => server.close(resolve))
  }
  return r
}

const cpuShown = (f: Figures): string => `(CPU ${f.cpuUs} µs a POST, ${f.loopCpuUs} on the event loop)`

async function call (service: PhaseService, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(service.url + path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`)
  return text ? JSON.parse(text) : undefined
}
const subscribe = async (service: PhaseService, url: string): Promise<number> => (await call(service, 'POST', '/v3/webhooks', { url })).id
const unsubscribe = async (service: PhaseService, id: number): Promise<void> => { await call(service, 'DELETE', `/v3/webhooks/${id}`) }

async function until (what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const give = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > give) throw new Error(`webhooks: never happened within ${timeoutMs / 1000} s: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

export interface WebhookFigures {
  overhead: Array<{ none: Figures, three: Figures }>
  burst: Array<{ changes: number, writeMs: number, afterLastCommitMs: number }>
  lag: Array<{ writes: number, ratePerSecond: number, medianMs: number, p99Ms: number, maxMs: number }>
  memory: { none: { peakMb: number, peakAnonMb: number }, many: { peakMb: number, peakAnonMb: number }, rounds: Array<{ none: Figures, many: Figures }> }
}

export async function measureWebhooks (ctx: PhaseContext): Promise<WebhookFigures> {
  const allowPrivate = { WEBHOOK_ALLOW_PRIVATE: 'true' }
  const receivers: Receiver[] = []
  const open = async (kind: Kind, onChange?: Parameters<typeof receiver>[1]): Promise<Receiver> => {
    const r = await receiver(kind, onChange)
    receivers.push(r)
    return r
  }
  // The receivers share the load generator's core: on a store's network they are other machines.
  // Left where the scheduler put them, the fast one (an answer per change) took the service's core
  // in the rounds with subscriptions only, and counted against the service's figures.
  const unpin = ctx.onLoadCore()
  try {
    const service = await ctx.startService('service@webhooks', await ctx.catalogue('webhooks', ctx.small), allowPrivate)
    let overhead: WebhookFigures['overhead']
    let burst: WebhookFigures['burst']
    let lag: WebhookFigures['lag']
    try {
      const job = { url: service.url, op: 'post' as const, seconds: ctx.seconds, connections: ctx.connections, idMax: ctx.small }
      const three = [await open('fast'), await open('slow'), await open('dead')]
      await ctx.runLoad({ ...job, seconds: ctx.warmSeconds })
      // The delivery code is warmed up as the writes are: without this the first round with
      // subscriptions paid its compiles, well below the rounds after it.
      const warming = []
      for (const x of three) warming.push(await subscribe(service, x.url))
      await ctx.runLoad({ ...job, seconds: ctx.warmSeconds })
      for (const id of warming) await unsubscribe(service, id)
      overhead = []
      const withThreeRound = async (): Promise<Figures> => {
        const ids = []
        for (const x of three) ids.push(await subscribe(service, x.url))
        const f = await charged(service.child, () => ctx.runLoad(job))
        for (const id of ids) await unsubscribe(service, id)
        return f
      }
      for (let r = 0; r < ctx.rounds; r++) {
        // In turn first and second: each round adds to the catalogue and the feed, and a round
        // run always second would always meet the larger one.
        const noneFirst = r % 2 === 0
        const none = noneFirst ? await charged(service.child, () => ctx.runLoad(job)) : undefined
        const withThree = await withThreeRound()
        const nonePair = none ?? await charged(service.child, () => ctx.runLoad(job))
        overhead.push({ none: nonePair, three: withThree })
        ctx.log(`webhooks round ${r + 1}${noneFirst ? '' : ' (subscriptions first)'}: POST ${nonePair.rps} req/s p99 ${nonePair.p99} ms ${cpuShown(nonePair)} with no subscriptions, ` +
          `${withThree.rps} req/s p99 ${withThree.p99} ms ${cpuShown(withThree)} with fast, slow and dead ` +
          `(${(withThree.rps / nonePair.rps).toFixed(2)}×; the fast receiver has had ${three[0].received})` +
          (nonePair.non2xx + nonePair.errors + withThree.non2xx + withThree.errors > 0 ? `; failures ${nonePair.non2xx + nonePair.errors} / ${withThree.non2xx + withThree.errors}` : ''))
      }
      burst = []
      lag = []
      for (let r = 0; r < ctx.rounds; r++) {
        burst.push(await burstRound(service, open, r))
        ctx.log(`webhooks round ${r + 1}: ${BURST} changes written in ${(burst[r].writeMs / 1000).toFixed(1)} s reached the fast receiver ${(burst[r].afterLastCommitMs / 1000).toFixed(2)} s after the last commit`)
        lag.push(await lagRound(service, open, ctx.seconds))
        ctx.log(`webhooks round ${r + 1}: ${lag[r].writes} POSTs at ${lag[r].ratePerSecond}/s, delivery lag median ${lag[r].medianMs} ms p99 ${lag[r].p99Ms} ms max ${lag[r].maxMs} ms`)
      }
    } finally {
      await service.stop()
    }
    return { overhead, burst, lag, memory: await memoryRounds(ctx, open, allowPrivate) }
  } finally {
    for (const r of receivers) await r.close()
    unpin()
  }
}

/** 10,000 creates in batches of 100, four in flight; how long after the last one is answered the fast receiver has every change. */
async function burstRound (service: PhaseService, open: (kind: Kind, onChange?: Parameters<typeof receiver>[1]) => Promise<Receiver>, round: number): Promise<WebhookFigures['burst'][number]> {
  const seen = new Set<number>()
  let last = 0
  const fast = await open('fast', (change, at) => { seen.add(change.seq); last = at })
  const id = await subscribe(service, fast.url)
  try {
    const started = performance.now()
    let next = 0
    const batches = BURST / BATCH_PLANTS
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < batches) {
        const b = next++
        const operations = Array.from({ length: BATCH_PLANTS }, (_, k) => ({ op: 'create', plant: plantFor(((round + 1) * batches + b) * BATCH_PLANTS + k) }))
        await call(service, 'POST', '/v3/plant/batch', { operations })
      }
    }))
    const committed = performance.now()
    await until(`${BURST} changes at the fast receiver (has ${seen.size})`, () => seen.size >= BURST, 300_000)
    return { changes: BURST, writeMs: Math.round(committed - started), afterLastCommitMs: Math.round(Math.max(0, last - committed)) }
  } finally {
    await unsubscribe(service, id)
  }
}

/** Single POSTs at 1,000/s for `seconds`; each plant's name is the time its POST was sent. */
async function lagRound (service: PhaseService, open: (kind: Kind, onChange?: Parameters<typeof receiver>[1]) => Promise<Receiver>, seconds: number): Promise<WebhookFigures['lag'][number]> {
  const lags: number[] = []
  const fast = await open('fast', (change, at) => {
    const sent = Number(/^lag (\d+(\.\d+)?)$/.exec(change.plant?.name ?? '')?.[1])
    if (Number.isFinite(sent)) lags.push(at - sent)
  })
  const id = await subscribe(service, fast.url)
  const pool = new Pool(service.url, { connections: 32 })
  try {
    let answered = 0
    let failed = 0
    const post = async (): Promise<void> => {
      const res = await pool.request({ method: 'POST', path: '/v3/plant', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: `lag ${performance.now()}` }) })
      await res.body.dump()
      if (res.statusCode >= 200 && res.statusCode < 300) answered++
      else failed++
    }
    const writes: Array<Promise<void>> = []
    const started = performance.now()
    const end = started + seconds * 1000
    // Paced by the clock, not by answers: as many sent as are due at each tick of about a millisecond.
    for (let now = started; now < end; now = performance.now()) {
      const due = Math.floor(((now - started) * PACED_RATE) / 1000)
      while (writes.length < due) writes.push(post().catch(() => { failed++ }))
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
    await Promise.all(writes)
    const ratePerSecond = Math.round(answered / ((performance.now() - started) / 1000))
    if (failed > 0) throw new Error(`webhooks: ${failed} of the paced POSTs failed`)
    await until(`${answered} paced changes at the fast receiver (has ${lags.length})`, () => lags.length >= answered, 300_000)
    lags.sort((a, b) => a - b)
    const at = (p: number): number => Math.round(lags[Math.min(lags.length - 1, Math.floor(p * lags.length))] * 10) / 10
    return { writes: answered, ratePerSecond, medianMs: at(0.5), p99Ms: at(0.99), maxMs: at(1) }
  } finally {
    await pool.close()
    await unsubscribe(service, id)
  }
}

/** Two services under the same POST rounds, one with 100 subscriptions (50 fast receivers, 50 dead), one with none. */
async function memoryRounds (ctx: PhaseContext, open: (kind: Kind) => Promise<Receiver>, allowPrivate: Record<string, string>): Promise<WebhookFigures['memory']> {
  const none = await ctx.startService('service@webhooks-none', await ctx.catalogue('webhooks-none', ctx.small), allowPrivate)
  let many: PhaseService | undefined
  try {
    many = await ctx.startService(`service@webhooks-${MANY}`, await ctx.catalogue(`webhooks-${MANY}`, ctx.small), allowPrivate)
    for (let i = 0; i < MANY; i++) await subscribe(many, (await open(i % 2 === 0 ? 'fast' : 'dead')).url)
    const job = { op: 'post' as const, seconds: ctx.seconds, connections: ctx.connections, idMax: ctx.small }
    const rounds: WebhookFigures['memory']['rounds'] = []
    for (let r = 0; r < ctx.rounds; r++) {
      const a = await ctx.runLoad({ ...job, url: none.url })
      const b = await ctx.runLoad({ ...job, url: many.url })
      rounds.push({ none: a, many: b })
      const [ma, mb] = [none.memory(), many.memory()]
      ctx.log(`webhooks round ${r + 1}: POST ${a.rps} req/s with no subscriptions (peak RSS ${ma.peakMb} MB, RssAnon ${ma.peakAnonMb} MB), ` +
        `${b.rps} req/s with ${MANY} (peak RSS ${mb.peakMb} MB, RssAnon ${mb.peakAnonMb} MB)`)
    }
    return { none: none.memory(), many: many.memory(), rounds }
  } finally {
    await none.stop()
    await many?.stop()
  }
}

const whole = (x: number): string => Number.isFinite(x) ? Math.round(x).toLocaleString('en') : '-'
const mark = (ok: boolean): string => ok ? 'met' : 'not met'

/** The webhooks table: each figure beside its target; ratios are medians of per-round ratios. */
export function webhookTable (f: WebhookFigures): string[] {
  const ratio = median(f.overhead.map((r) => r.three.rps / r.none.rps))
  const after = Math.max(...f.burst.map((r) => r.afterLastCommitMs))
  const lagMedian = median(f.lag.map((r) => r.medianMs))
  const grown = f.memory.many.peakMb - f.memory.none.peakMb
  return [
    '',
    'webhooks:',
    '',
    '| target | wanted | measured | |',
    '|---|---|---|---|',
    `| POST req/s with 3 subscriptions (fast, 200 ms, dead) ÷ none | ≥ 0.9 | ${r2(ratio)} (${whole(median(f.overhead.map((r) => r.three.rps)))} against ` +
      `${whole(median(f.overhead.map((r) => r.none.rps)))} req/s; p99 ${r2(median(f.overhead.map((r) => r.three.p99)))} against ${r2(median(f.overhead.map((r) => r.none.p99)))} ms; ` +
      `CPU a POST ${whole(median(f.overhead.map((r) => r.three.cpuUs ?? NaN)))} against ${whole(median(f.overhead.map((r) => r.none.cpuUs ?? NaN)))} µs, ` +
      `on the event loop ${whole(median(f.overhead.map((r) => r.three.loopCpuUs ?? NaN)))} against ${whole(median(f.overhead.map((r) => r.none.loopCpuUs ?? NaN)))}) | ${mark(ratio >= 0.9)} |`,
    `| ${whole(BURST)} changes at a fast receiver, after the last commit | ≤ 10 s | ${r2(after / 1000)} s, the slowest round (per round: ` +
      `${f.burst.map((r) => `${r2(r.afterLastCommitMs / 1000)} s after writes of ${r2(r.writeMs / 1000)} s`).join(', ')}) | ${mark(after <= 10_000)} |`,
    `| median delivery lag, writes at ${whole(PACED_RATE)}/s | ≤ 100 ms | ${r2(lagMedian)} ms (per round: ${f.lag.map((r) => `median ${r2(r.medianMs)}, p99 ${r2(r.p99Ms)}, max ${r2(r.maxMs)} ms at ${whole(r.ratePerSecond)} writes/s`).join('; ')}) | ${mark(lagMedian <= 100)} |`,
    `| peak RSS, ${MANY} subscriptions (50 dead) − none | ≤ +50 MB | ${grown >= 0 ? '+' : ''}${grown} MB (${f.memory.many.peakMb} against ${f.memory.none.peakMb} MB; ` +
      `RssAnon ${f.memory.many.peakAnonMb} against ${f.memory.none.peakAnonMb} MB; POST ${whole(median(f.memory.rounds.map((r) => r.many.rps)))} against ` +
      `${whole(median(f.memory.rounds.map((r) => r.none.rps)))} req/s) | ${mark(grown <= 50)} |`,
    '',
    'receivers: node:http on loopback in the bench process; lag: from the POST being sent to its change arriving'
  ]
}
