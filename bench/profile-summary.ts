import { readFileSync } from 'node:fs'

// node --import tsx bench/profile-summary.ts <file.cpuprofile> [top]
// Self time by function and by where the code lives (a package, node's internals, or this project),
// from a profile written by `node --cpu-prof` (npm run bench -- --cpu-prof writes one per service).

interface CallFrame { functionName: string, url: string, lineNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame, children?: number[] }
interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[] }

const [file, topArg] = process.argv.slice(2)
if (!file) {
  process.stderr.write('usage: profile-summary <file.cpuprofile> [top]\n')
  process.exit(2)
}
const top = Number(topArg ?? 30)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const selfUs = new Map<number, number>()
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
// Idle time is the server waiting for the load generator (or for another target's turn): left out.
for (const [id] of selfUs) if (byId.get(id)!.callFrame.functionName === '(idle)') selfUs.delete(id)
const total = [...selfUs.values()].reduce((a, b) => a + b, 0)

function place (url: string): string {
  if (url === '') return '(native/vm)'
  if (url.startsWith('node:')) return 'node:internals'
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1]
  const own = /\/(src|bench)\/(.*)$/.exec(url)
  return own ? `${own[1]}/${own[2]}` : url
}

const byFunction = new Map<string, number>()
const byPlace = new Map<string, number>()
for (const [id, us] of selfUs) {
  const { callFrame: f } = byId.get(id)!
  const where = place(f.url)
  const name = `${f.functionName || '(anonymous)'} ${where}${f.url ? `:${f.lineNumber + 1}` : ''}`
  byFunction.set(name, (byFunction.get(name) ?? 0) + us)
  byPlace.set(where, (byPlace.get(where) ?? 0) + us)
}

const show = (title: string, m: Map<string, number>, n: number): void => {
  process.stdout.write(`\n${title} (of ${(total / 1e6).toFixed(1)} s busy)\n`)
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    process.stdout.write(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}\n`)
  }
}
show('self time by place', byPlace, 20)
show('self time by function', byFunction, top)
