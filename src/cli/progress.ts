import cliProgress from 'cli-progress'
import { formatDuration, type Io } from './command.js'

/** Progress of a long step: a bar with rate and ETA on a terminal, a plain line now and then otherwise. */
export interface Progress {
  update (done: number): void
  stop (): void
}

const PLAIN_EVERY_MS = 5000

export function startProgress (io: Io, label: string, total: number, { quiet = false } = {}): Progress {
  const started = Date.now()
  const rate = (done: number): number => done / Math.max((Date.now() - started) / 1000, 0.001)
  if (quiet || total === 0) return { update () {}, stop () {} }
  if (io.stderr.isTTY) {
    const bar = new cliProgress.SingleBar({
      stream: io.stderr,
      format: `${label} [{bar}] {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {eta_formatted}`,
      etaBuffer: 50,
      fps: 5,
      hideCursor: true
    }, cliProgress.Presets.shades_classic)
    bar.start(total, 0, { rate: '0' })
    return {
      update: (done) => bar.update(done, { rate: Math.round(rate(done)).toLocaleString('en') }),
      stop: () => bar.stop()
    }
  }
  // Logs and CI: no control characters, one readable line every few seconds.
  let last = started
  return {
    update (done) {
      const now = Date.now()
      if (now - last < PLAIN_EVERY_MS || done >= total) return
      last = now
      const r = rate(done)
      io.stderr.write(`${label}: ${done.toLocaleString('en')}/${total.toLocaleString('en')} rows ` +
        `(${Math.floor((done / total) * 100)}%), ${Math.round(r).toLocaleString('en')} rows/s, ETA ${formatDuration(((total - done) / r) * 1000)}\n`)
    },
    stop () {}
  }
}
