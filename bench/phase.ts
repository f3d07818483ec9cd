import type { ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import type { PlantStore } from '../src/store/plant-store.js'
import type { Figures, Job } from './load.js'

// What run.ts hands a phase of its own (bench/bulk.ts, bench/webhooks.ts): the run's settings, the
// load generator, and ways to make a catalogue, start a service on it and run the plants CLI, all
// on the servers' core as the other targets are.

export interface PhaseContext {
  engine: 'sqlite' | 'postgres'
  rounds: number
  seconds: number
  warmSeconds: number
  connections: number
  /** The small catalogue's size (the phases' services start from one of this size). */
  small: number
  quick: boolean
  runLoad: (job: Job) => Promise<Figures>
  /**
   * A fresh catalogue of `plants` plants, preloaded through the store: the environment that names it
   * (DATA_DIR or DATABASE_URL). `fields`: added to the i-th plant's body (bench/plants.ts plantFor).
   */
  catalogue: (name: string, plants: number, fields?: (i: number) => object) => Promise<Record<string, string>>
  /** The store of a catalogue, opened in the bench's own process (to write what a preload of plants does not: stock). */
  openStore: (catalogue: Record<string, string>) => Promise<PlantStore>
  /** The service (as the other service targets, on the servers' core) on that catalogue, with `env` added. */
  startService: (name: string, catalogue: Record<string, string>, env?: Record<string, string>) => Promise<PhaseService>
  /** The plants CLI on the servers' core; resolves when it exits, with what it printed and how long it took. */
  cli: (args: string[], catalogue: Record<string, string>) => Promise<{ code: number | null, stdout: string, stderr: string, ms: number }>
  log: (line: string) => void
  /**
   * Moves the bench's own process (and every thread of it) to the load generator's core until the
   * function returned is called: receivers in it then stand for other machines, as they would be,
   * rather than taking the service's core from it.
   */
  onLoadCore: () => () => void
}

export interface PhaseService {
  name: string
  url: string
  child: ChildProcess
  /** The event loop's delays since the last call (bench/loop-probe.mjs, inside the service). */
  loopDelay: () => Promise<LoopDelay>
  /** Peak RSS (VmHWM) and the peak of RssAnon sampled every 100 ms, in MB. */
  memory: () => { peakMb: number, peakAnonMb: number }
  stop: () => Promise<void>
}

export interface LoopDelay { maxMs: number, p99Ms: number, windows: number }

const WINDOW_MS = 100

/**
 * A reader of the probe's file (bench/loop-probe.mjs): each call answers the longest delay, and
 * the highest of the windows' p99s, of the windows that ended since the last call's.
 */
export function loopProbeReader (file: string): () => Promise<LoopDelay> {
  let since = Date.now()
  return async () => {
    const mark = Date.now()
    // The window running now is written within WINDOW_MS (later if the loop is held: then it holds the hold).
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS * 2.5))
    const windows = (existsSync(file) ? readFileSync(file, 'utf8') : '').split('\n').filter(Boolean)
      .map((line) => line.split(' ').map(Number)).filter(([end]) => end > since && end <= mark + WINDOW_MS)
    since = mark + WINDOW_MS
    return {
      maxMs: windows.reduce((m, [, max]) => Math.max(m, max), 0),
      p99Ms: windows.reduce((m, [, , p99]) => Math.max(m, p99), 0),
      windows: windows.length
    }
  }
}
