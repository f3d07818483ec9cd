import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'csv-parse/sync'
import { BATCH_PLANTS, LARGEST_BATCH, type Figures } from './load.js'
import type { LoopDelay, PhaseContext } from './phase.js'
import { median, r2 } from './figures.js'

// Many plants at once, measured targets: a phase of `npm run bench` on services of their own:
//   `batches`: plants created per second through batches of 100 against single POSTs, both at the
//     run's connections (32); a 500-operation batch's p99 (one connection sending them beside 31
//     sending single POSTs) against a single POST's p99 alone; the longest the service's event loop
//     was held while batches ran, measured inside it (bench/loop-probe.mjs), beside the same figure
//     during single POSTs (what the machine's own noise gives: a process descheduled counts too);
//   `import`: `plants import` of a file that updates every plant of a catalogue of --import-rows
//     plants (100,000; 10,000 with --quick), in rows a second, start to exit of the command.

export const BULK_OPS = ['batches', 'import'] as const

export interface BatchRound {
  post: Figures
  batch: Figures
  /** Single POSTs, with `mixed` the 500-operation batches sent beside them. */
  beside: Figures
  /** 500-operation batches alone, one at a time on one connection: what one batch holds the loop for, without a queue of others. */
  alone: Figures
  loop: { post: LoopDelay, batch: LoopDelay, beside: LoopDelay, alone: LoopDelay }
}
export interface ImportRound { rows: number, ms: number, updated: number, rejected: number, cliRate: number }
export interface BulkFigures { connections: number, batches?: BatchRound[], imports?: ImportRound[], importRows?: number }

export async function measureBatches (ctx: PhaseContext): Promise<BatchRound[]> {
  const catalogue = await ctx.catalogue('batches', ctx.small)
  const service = await ctx.startService('service@batches', catalogue)
  try {
    const job = { url: service.url, seconds: ctx.seconds, connections: ctx.connections, idMax: ctx.small }
    const beside = { ...job, op: 'post' as const, mix: { op: 'batch500' as const, connections: 1 } }
    for (const warm of [{ ...job, op: 'post' as const }, { ...job, op: 'batch' as const }, beside]) await ctx.runLoad({ ...warm, seconds: ctx.warmSeconds })
    const rounds: BatchRound[] = []
    for (let r = 0; r < ctx.rounds; r++) {
      await service.loopDelay() // from here on
      const post = await ctx.runLoad({ ...job, op: 'post' })
      const postLoop = await service.loopDelay()
      const batch = await ctx.runLoad({ ...job, op: 'batch' })
      const batchLoop = await service.loopDelay()
      const mixed = await ctx.runLoad(beside)
      const besideLoop = await service.loopDelay()
      const alone = await ctx.runLoad({ ...job, op: 'batch500', connections: 1 })
      const aloneLoop = await service.loopDelay()
      rounds.push({ post, batch, beside: mixed, alone, loop: { post: postLoop, batch: batchLoop, beside: besideLoop, alone: aloneLoop } })
      const big = mixed.mixed!
      ctx.log(`batches round ${r + 1}: POST ${post.rps} req/s p99 ${post.p99} ms (loop max ${postLoop.maxMs} ms); ` +
        `batches of ${BATCH_PLANTS} ${batch.rps * BATCH_PLANTS} plants/s p99 ${batch.p99} ms (loop max ${batchLoop.maxMs} ms); ` +
        `${LARGEST_BATCH}-op batches ${big.requests} answered p99 ${big.p99} ms beside POSTs ${mixed.rps} req/s p99 ${mixed.p99} ms (loop max ${besideLoop.maxMs} ms); ` +
        `${LARGEST_BATCH}-op batches alone ${alone.requests} answered p99 ${alone.p99} ms (loop max ${aloneLoop.maxMs} ms)` +
        (post.non2xx + post.errors + batch.non2xx + batch.errors + mixed.non2xx + mixed.errors + big.non2xx + big.errors > 0
          ? `; failures ${post.non2xx + post.errors}/${batch.non2xx + batch.errors}/${mixed.non2xx + mixed.errors}/${big.non2xx + big.errors}`
          : ''))
    }
    return rounds
  } finally {
    await service.stop()
  }
}

const STATUSES = ['available', 'pending', 'sold']

/**
 * A catalogue of `rows` plants; each round exports it to CSV, gives every row the next status (as a
 * spreadsheet edit would) and imports the file, so every row updates its plant. (Exported afresh
 * each round, as an operator must: a row of a plant changed since its export, here by the round
 * before, is refused rather than written over that change.)
 */
export async function measureImport (ctx: PhaseContext, rows: number, dir: string): Promise<ImportRound[]> {
  const catalogue = await ctx.catalogue('import', rows)
  const exported = join(dir, 'import-export.csv')
  const file = join(dir, 'import.csv')
  const rounds: ImportRound[] = []
  for (let r = 0; r < ctx.rounds; r++) {
    const out = await ctx.cli(['export', '--output', exported], catalogue)
    if (out.code !== 0) throw new Error(`plants export failed (${out.code}): ${out.stderr}`)
    const header = readFileSync(exported, 'utf8').split('\n', 1)[0].split(',')
    const table = parse(readFileSync(exported), { from_line: 2 }) as string[][]
    const status = header.indexOf('status')
    if (table.length !== rows || status < 0) throw new Error(`the export holds ${table.length} rows (${rows} expected), header ${header.join(',')}`)
    for (const row of table) row[status] = STATUSES[(STATUSES.indexOf(row[status]) + 1) % STATUSES.length]
    writeFileSync(file, [header.join(','), ...table.map((row) => row.map(csvCell).join(','))].join('\n') + '\n')
    const run = await ctx.cli(['import', file, '--quiet'], catalogue)
    const count = (what: string): number => Number(new RegExp(`${what}\\s+([\\d,]+)`).exec(run.stdout)?.[1].replace(/,/g, '') ?? NaN)
    const round = {
      rows,
      ms: run.ms,
      updated: count('updated'),
      rejected: count('rejected'),
      cliRate: Number(/\(([\d,]+) rows\/s\)/.exec(run.stdout)?.[1].replace(/,/g, '') ?? NaN)
    }
    if (run.code !== 0 || round.updated !== rows) throw new Error(`plants import (round ${r + 1}) exited ${run.code}, updated ${round.updated} of ${rows}:\n${run.stdout}${run.stderr.slice(0, 2000)}`)
    rounds.push(round)
    ctx.log(`import round ${r + 1}: ${rows} rows updated in ${(run.ms / 1000).toFixed(1)} s, ${Math.round(rows / (run.ms / 1000))} rows/s start to exit (the command's own figure ${round.cliRate} rows/s)`)
  }
  return rounds
}

/** A cell as CSV writes it: quoted when it holds a comma, a quote or a line break (the export's own text kept as it is). */
const csvCell = (cell: string): string => /[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell

const whole = (x: number): string => Number.isFinite(x) ? Math.round(x).toLocaleString('en') : '-'
const mark = (ok: boolean): string => ok ? 'met' : 'not met'

/** The many-plants table: each figure beside its target; ratios are medians of per-round ratios. */
export function bulkTable (f: BulkFigures): string[] {
  const lines = ['', 'many plants at once:', '', '| target | wanted | measured | |', '|---|---|---|---|']
  if (f.batches) {
    const b = f.batches
    const m = (pick: (r: BatchRound) => number): number => median(b.map(pick))
    const plantsRatio = m((r) => (r.batch.rps * BATCH_PLANTS) / r.post.rps)
    const p99Ratio = m((r) => r.beside.mixed!.p99 / r.post.p99)
    // The target is what a 500-operation batch holds: beside single POSTs and alone. Batches of 100 on
    // 32 connections (3,200 plants in flight at once) are shown beside it, not judged by it.
    const longest = Math.max(...b.flatMap((r) => [r.loop.beside.maxMs, r.loop.alone.maxMs]))
    lines.push(
      `| plants/s through batches of ${BATCH_PLANTS} ÷ single POSTs, ${f.connections} connections each | ≥ 3 | ${r2(plantsRatio)} ` +
        `(${whole(m((r) => r.batch.rps * BATCH_PLANTS))} against ${whole(m((r) => r.post.rps))} plants/s) | ${mark(plantsRatio >= 3)} |`,
      `| ${LARGEST_BATCH}-operation batch p99 ÷ single POST p99 | ≤ 50 | ${r2(p99Ratio)} (${r2(m((r) => r.beside.mixed!.p99))} ms, ` +
        `${whole(b.reduce((n, r) => n + r.beside.mixed!.requests, 0))} batches on 1 connection beside POSTs on the rest, against ${r2(m((r) => r.post.p99))} ms alone; ` +
        `POST p99 beside them ${r2(m((r) => r.beside.p99))} ms) | ${mark(p99Ratio <= 50)} |`,
      `| longest event-loop delay while ${LARGEST_BATCH}-operation batches run | ≤ 20 ms | ${r2(longest)} ms (per round, beside single POSTs: ${b.map((r) => r2(r.loop.beside.maxMs)).join(', ')}; ` +
        `one at a time, nothing else sent: ${b.map((r) => r2(r.loop.alone.maxMs)).join(', ')}; ${whole(b.reduce((n, r) => n + r.beside.mixed!.requests + r.alone.requests, 0))} batches; ` +
        `during single POSTs alone, the noise: ${b.map((r) => r2(r.loop.post.maxMs)).join(', ')}) | ${mark(longest <= 20)} |`,
      `| longest event-loop delay while batches of ${BATCH_PLANTS} run on ${f.connections} connections (not the target: ${f.connections * BATCH_PLANTS} plants in flight at once) | | ` +
        `${r2(Math.max(...b.map((r) => r.loop.batch.maxMs)))} ms (per round: ${b.map((r) => r2(r.loop.batch.maxMs)).join(', ')}) | |`
    )
  }
  if (f.imports) {
    const rate = median(f.imports.map((r) => r.rows / (r.ms / 1000)))
    lines.push(`| plants import updating ${whole(f.importRows ?? NaN)} plants | ≥ 10,000 rows/s | ${whole(rate)} rows/s start to exit ` +
      `(per round: ${f.imports.map((r) => `${(r.ms / 1000).toFixed(1)} s`).join(', ')}; the command's own figure ${whole(median(f.imports.map((r) => r.cliRate)))}) | ${mark(rate >= 10_000)} |`)
  }
  lines.push('', 'batches: creates; loop delays measured inside the service (monitorEventLoopDelay, 1 ms resolution) and include any time the process waited for a core')
  return lines
}
