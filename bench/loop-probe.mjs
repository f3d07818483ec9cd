import { appendFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { isMainThread } from 'node:worker_threads'

// Preloaded into a service the bench starts (`node --import ./bench/loop-probe.mjs …`): how long
// its event loop was held, measured inside the process with monitorEventLoopDelay (a
// batch must never hold it for more than 20 ms at a time). Every 100 ms it appends a line to
// LOOP_PROBE_FILE, `<epoch ms> <longest delay ms> <p99 ms>` of the window just ended, and starts
// the next; the bench takes the windows of the time it measured. No signal: the service's
// close-with-grace takes SIGUSR2 (and SIGHUP…) as a request to shut down. Plain JavaScript, so
// that it loads beside the tsc output as well as under tsx.
//
// A 1 ms resolution: the histogram records each interval between the probe's timer firings, so a
// loop held for H ms shows as a delay between H and H + 1 ms (at 10 ms, prom-client's setting,
// a figure would be up to 10 ms off). A window held by a long task is written late, with it.
//
// The main thread only: `--import` is inherited by every worker thread, and the SQLite writer's
// thread holds its own loop through each write by design (better-sqlite3 is synchronous). Before
// this check its windows went to the same file, and a 500-operation batch's write was read as the
// service's event loop held (found with strace: the main thread kept polling through such a
// "delay").

const file = process.env.LOOP_PROBE_FILE
if (file && isMainThread) {
  const delays = monitorEventLoopDelay({ resolution: 1 })
  delays.enable()
  const ms = (ns) => Math.round(ns / 1e4) / 100
  setInterval(() => {
    appendFileSync(file, `${Date.now()} ${ms(delays.max)} ${ms(delays.percentile(99))}\n`)
    delays.reset()
  }, 100).unref()
}
