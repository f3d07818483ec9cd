import { readFileSync } from 'node:fs'

// node --import tsx bench/profile-stretches.ts <file.cpuprofile> [count] [--from=µs] [--to=µs]
//
// The longest stretches the event loop ran without going idle, from a profile written by
// `node --cpu-prof`: what holds the loop for tens of milliseconds at a time (a batch must
// never hold it for more than 20 ms), which a summary of self time (profile-summary.ts) spreads over
// the whole run. A stretch is a run of consecutive samples none of which is `(idle)`; its length is
// the sum of their intervals (a gap the process spent off the core counts too: read it beside the
// load average). For each, the functions on the stack in most of its samples, inclusive, outermost
// first after the ones every sample shares.

interface CallFrame { functionName: string, url: string, lineNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame, children?: number[] }
interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[], startTime: number }

const args = process.argv.slice(2)
const [file, countArg] = args.filter((a) => !a.startsWith('--'))
if (!file) {
  process.stderr.write('usage: profile-stretches <file.cpuprofile> [count] [--from=µs] [--to=µs]\n')
  process.exit(2)
}
const option = (name: string): number | undefined => {
  const value = args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
  return value === undefined ? undefined : Number(value)
}
const count = Number(countArg ?? 10)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const from = profile.startTime + (option('from') ?? 0)
const to = option('to') === undefined ? Infinity : profile.startTime + option('to')!
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

const place = (url: string): string => url === ''
  ? ''
  : url.includes('/node_modules/')
    ? url.replace(/.*\/node_modules\/((@[^/]+\/)?[^/]+).*/, '$1')
    : url.startsWith('node:') ? 'node' : url.replace(/.*\/(src|bench|dist)\//, '$1/')
const label = (id: number): string => {
  const f = byId.get(id)!.callFrame
  return `${f.functionName || '(anonymous)'}${f.url ? ` ${place(f.url)}:${f.lineNumber + 1}` : ''}`
}
const stackOf = (id: number): number[] => {
  const stack: number[] = []
  for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) stack.push(n)
  return stack.reverse()
}

interface Stretch { start: number, us: number, samples: number[] }
const stretches: Stretch[] = []
let current: Stretch | undefined
let t = profile.startTime
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0
  t += delta
  if (t < from || t > to) return
  if (byId.get(id)!.callFrame.functionName === '(idle)') {
    if (current) stretches.push(current)
    current = undefined
    return
  }
  current ??= { start: t - delta - profile.startTime, us: 0, samples: [] }
  current.us += delta
  current.samples.push(id)
})
if (current) stretches.push(current)

stretches.sort((a, b) => b.us - a.us)
const busy = stretches.reduce((n, s) => n + s.us, 0)
console.log(`${stretches.length} stretches, ${(busy / 1e6).toFixed(2)} s busy; over 20 ms: ${stretches.filter((s) => s.us > 20_000).length}, over 10 ms: ${stretches.filter((s) => s.us > 10_000).length}`)
for (const s of stretches.slice(0, count)) {
  const inclusive = new Map<number, number>()
  for (const id of s.samples) for (const frame of new Set(stackOf(id))) inclusive.set(frame, (inclusive.get(frame) ?? 0) + 1)
  const n = s.samples.length
  const shown = [...inclusive].filter(([frame, k]) => k >= n * 0.2 && byId.get(frame)!.callFrame.functionName !== '(root)')
    .sort((a, b) => b[1] - a[1]).slice(0, 12)
  console.log(`\n${(s.us / 1000).toFixed(1)} ms at ${(s.start / 1e6).toFixed(3)} s (${n} samples):`)
  for (const [frame, k] of shown) console.log(`  ${((100 * k) / n).toFixed(0).padStart(3)}%  ${label(frame)}`)
}
