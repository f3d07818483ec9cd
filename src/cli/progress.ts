import cliProgress from 'cli-progress'
import { formatDuration, type Io } from './command.js'

/** Progress of a long step: a bar with rate and ETA on a terminal, a plain line now and then otherwise. */
export interface Progress {
  update (done: number): void
  /** A line for the operator (a refused row) while the step runs: above the bar on a terminal, never written over it. */
  log (line: string): void
  stop (): void
}

const PLAIN_EVERY_MS = 5000
const WRAP_ON = '\u001b[?7h'
const WRAP_OFF = '\u001b[?7l'
/** How often the bar moves at most: smooth to the eye, and few enough redraws to cost nothing beside an import. */
export const BAR_EVERY_MS = 100

/** The time left, as a bar shows it: whole seconds (a tenth of a second would flicker), or unknown before any row is done. */
export function etaText (ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '…'
  const s = Math.ceil(ms / 1000)
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`
}

/**
 * Until `stop`, Ctrl-C (or SIGTERM) puts the terminal back as it was (the bar hides the cursor and
 * turns line wrapping off), says how far the step got and what to do, then ends the process as the
 * signal would have: an operator stopping a long import is left neither a broken terminal nor silence.
 */
function onInterrupt (io: Io, label: string, done: () => number, restore: () => void, afterwards: string): () => void {
  const signals = ['SIGINT', 'SIGTERM'] as const
  const handler = (signal: NodeJS.Signals): void => {
    remove()
    restore()
    io.stderr.write(`\n${label}: interrupted near row ${done().toLocaleString('en')}${afterwards === '' ? '' : `; ${afterwards}`}\n`)
    process.kill(process.pid, signal)
  }
  const remove = (): void => { for (const signal of signals) process.removeListener(signal, handler) }
  for (const signal of signals) process.once(signal, handler)
  return remove
}

/** `afterwards`: what an interruption leaves and how to go on, said when one comes. */
export function startProgress (io: Io, label: string, total: number, { quiet = false, afterwards = '' } = {}): Progress {
  const started = Date.now()
  const rate = (done: number): number => done / Math.max((Date.now() - started) / 1000, 0.001)
  // The rate so far, not cli-progress's own ETA: that one reads 0 until its first update and from
  // the last few updates only, and a bar whose first update comes late showed "ETA 0s" all along.
  const left = (done: number): number | undefined => done > 0 ? ((total - done) / rate(done)) * 1000 : undefined
  const write = (line: string): void => { io.stderr.write(`${line}\n`) }
  if (quiet || total === 0) return { update () {}, log: write, stop () {} }
  let reached = 0
  if (io.stderr.isTTY) {
    // A MultiBar of one: its log() puts lines above the bar at the next redraw. Written straight to
    // the terminal they landed on the bar's line with wrapping off, cut at its edge, and the bar's
    // cursor jumps then drew over them and over the summary after it (an operator found it).
    const bars = new cliProgress.MultiBar({
      stream: io.stderr,
      format: `${label} [{bar}] {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {left}`,
      fps: 1000 / BAR_EVERY_MS,
      hideCursor: true
    }, cliProgress.Presets.shades_classic)
    const bar = bars.create(total, 0, { rate: '0', left: etaText(undefined) })
    const unhook = onInterrupt(io, label, () => reached, () => bars.stop(), afterwards)
    let drawn = started
    return {
      // Called as often as rows are done: the bar takes the count at most every BAR_EVERY_MS (and the last).
      update: (done) => {
        reached = done
        const now = Date.now()
        if (now - drawn < BAR_EVERY_MS && done < total) return
        drawn = now
        bar.update(done, { rate: Math.round(rate(done)).toLocaleString('en'), left: etaText(left(done)) })
      },
      // Wrapping on for the line (the bar turns it off for itself): a reason wider than the terminal wraps rather than being cut at its edge.
      log: (line) => { bars.log(`${WRAP_ON}${line}\n${WRAP_OFF}`) },
      stop: () => {
        unhook()
        bars.update() // a redraw writes the lines logged since the last one: stop() alone drops them
        bars.stop()
      }
    }
  }
  // Logs and CI: no control characters, one readable line every few seconds.
  let last = started
  const unhook = onInterrupt(io, label, () => reached, () => {}, afterwards)
  return {
    log: write,
    update (done) {
      reached = done
      const now = Date.now()
      if (now - last < PLAIN_EVERY_MS || done >= total) return
      last = now
      const r = rate(done)
      io.stderr.write(`${label}: ${done.toLocaleString('en')}/${total.toLocaleString('en')} rows ` +
        `(${Math.floor((done / total) * 100)}%), ${Math.round(r).toLocaleString('en')} rows/s, ETA ${formatDuration(((total - done) / r) * 1000)}\n`)
    },
    stop: unhook
  }
}
