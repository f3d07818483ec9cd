import { spawnSync, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import type { Figures } from './load.js'

// A service's CPU time from /proc: how a round's requests are charged to it (run.ts's service
// rounds, the webhooks phase's).

/** CPU time the process has used, user and system, all threads, in microseconds. */
export const cpuMicros = (child: ChildProcess): number => statMicros(`/proc/${child.pid}/stat`)
/**
 * The same for the main thread alone (its task id is the process id): the event loop, where the
 * HTTP work is done. The rest is the other threads': the SQLite writer thread, GC helpers, libuv's pool.
 */
export const loopMicros = (child: ChildProcess): number => statMicros(`/proc/${child.pid}/task/${child.pid}/stat`)
function statMicros (file: string): number {
  // Fields 14 and 15 of the stat file, after the parenthesised command name.
  const fields = readFileSync(file, 'utf8').split(') ')[1].split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS
}
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100

/**
 * A round's figures with the service's CPU per answer, all threads and the event loop's: CPU per
 * answer hardly moves with what else runs on the machine, unlike req/s, the steadier efficiency figure.
 */
export async function charged (child: ChildProcess, round: () => Promise<Figures>): Promise<Figures> {
  const [cpu, loop] = [cpuMicros(child), loopMicros(child)]
  const f = await round()
  f.cpuUs = Math.round((cpuMicros(child) - cpu) / Math.max(1, f.requests))
  f.loopCpuUs = Math.round((loopMicros(child) - loop) / Math.max(1, f.requests))
  return f
}
