import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { checkImports, FLOORS } from '../scripts/check-imports.js'

// The import check on small trees of its own: each tree breaks (or keeps) one rule.

const scratch = mkdtempSync(join(tmpdir(), 'check-imports-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

let trees = 0
/** A fake src/: file path -> source text. */
function tree (files: Record<string, string>): string {
  const root = join(scratch, `src-${trees++}`)
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

const layered = {
  'catalogue/plant.ts': 'export interface Plant { id: number }\n',
  'store/plant-store.ts': "import type { Plant } from '../catalogue/plant.js'\nexport const get = (): Plant => ({ id: 1 })\n",
  'plants/routes.ts': "import { get } from '../store/plant-store.js'\nexport const route = () => get()\n",
  'app.ts': "import { route } from './plants/routes.js'\nroute()\n"
}

test('a tree whose imports only run down (or along) a floor has no problem', () => {
  const report = checkImports(tree(layered))
  assert.deepEqual(report.problems, [])
  assert.equal(report.edges.length, 3)
})

test('a circle of imports is a problem naming its files, also through a type-only import', () => {
  const report = checkImports(tree({
    ...layered,
    'http/a.ts': "import { b } from './b.js'\nexport const a = () => b\n",
    'http/b.ts': "import type { C } from '../plants/c.js'\nexport const b = 1\nexport type B = C\n",
    'plants/c.ts': "import { a } from '../http/a.js'\nexport type C = typeof a\n"
  }))
  assert.deepEqual(report.circles, [['http/a.ts', 'http/b.ts', 'plants/c.ts']])
  assert.equal(report.problems.length, 1)
  assert.match(report.problems[0], /import circle among 3 files: http\/a\.ts, http\/b\.ts, plants\/c\.ts/)
})

test('an import from a lower floor to a higher one is a problem, a dynamic import() and `typeof import()` too', () => {
  const report = checkImports(tree({
    ...layered,
    'store/sqlite.ts': "export const open = async () => (await import('../plants/routes.js')).route\n",
    'catalogue/query.ts': "export type Store = typeof import('../store/plant-store.js')\n"
  }))
  assert.deepEqual(report.problems, [
    'store/sqlite.ts (floor 1) imports plants/routes.ts (floor 2)',
    'catalogue/query.ts (floor 0) imports store/plant-store.ts (floor 1) (type only, not in ALLOWED_UPWARD)'
  ].sort((a, b) => a.localeCompare(b)))
})

test('a type-only upward import passes only when it is listed, and at most two may be', () => {
  const files = {
    ...layered,
    'store/plant-store.ts': "import type { Route } from '../plants/routes.js'\nexport const get = () => ({ id: 1 })\nexport type R = Route\n",
    'plants/routes.ts': "import { get } from '../store/plant-store.js'\nexport const route = () => get()\nexport type Route = typeof route\n"
  }
  const root = tree(files)
  assert.match(checkImports(root).problems.join('\n'), /store\/plant-store\.ts \(floor 1\) imports plants\/routes\.ts \(floor 2\) \(type only/)
  const allowed = [{ from: 'store/plant-store.ts', to: 'plants/routes.ts', why: 'a test' }]
  // Listed, it is neither an upward problem nor half of a circle.
  assert.deepEqual(checkImports(root, FLOORS, allowed).problems, [])
  // A value import is never allowed, listed or not.
  const valued = tree({ ...files, 'store/plant-store.ts': "import { route } from '../plants/routes.js'\nexport const get = () => ({ id: 1 })\nexport const r = route\n" })
  assert.equal(checkImports(valued, FLOORS, allowed).problems.length, 2) // the upward import and the circle it closes
  const tooMany = [...allowed, ...allowed, ...allowed]
  assert.match(checkImports(root, FLOORS, tooMany).problems.join('\n'), /3 upward imports allowed; at most 2/)
})

test('`import { type A }` counts as type-only; a room with no floor and a missing file are problems', () => {
  const report = checkImports(tree({
    ...layered,
    'store/named.ts': "import { type Route } from '../plants/routes.js'\nexport type R = Route\n",
    'keys/scope.ts': "import { gone } from './gone.js'\nexport const s = gone\n"
  }))
  assert.deepEqual(report.upward.map((edge) => [edge.from, edge.typeOnly]), [['store/named.ts', true]])
  assert.ok(report.problems.includes('keys: has no floor; give it one in FLOORS (scripts/check-imports.ts)'))
  assert.ok(report.problems.includes('keys/scope.ts: imports ./gone.js, which is no .ts file under src/'))
})

test('the command exits 1 on a problem and 0 on a clean tree (npm run lint runs it)', () => {
  const script = fileURLToPath(new URL('../scripts/check-imports.ts', import.meta.url))
  const run = (root: string) => spawnSync(process.execPath, ['--import', 'tsx', script, root], { encoding: 'utf8' })
  const clean = run(tree(layered))
  assert.equal(clean.status, 0, clean.stderr)
  assert.match(clean.stdout, /4 files, 3 imports, no circle/)
  const broken = run(tree({ ...layered, 'catalogue/plant.ts': "import '../app.js'\nexport interface Plant { id: number }\n" }))
  assert.equal(broken.status, 1)
  assert.match(broken.stderr, /catalogue\/plant\.ts \(floor 0\) imports app\.ts \(floor 3\)/)
  assert.match(broken.stderr, /import circle among 4 files/)
})
