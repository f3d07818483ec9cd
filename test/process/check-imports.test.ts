import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ALLOWED_PACKAGES, checkCircles, checkImports, FLOORS, FORBIDDEN_PACKAGES } from '../../scripts/check-imports.js'

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
    'plants/a.ts': "import { b } from './b.js'\nexport const a = () => b\n",
    'plants/b.ts': "import type { C } from '../photos/c.js'\nexport const b = 1\nexport type B = C\n",
    'photos/c.ts': "import { a } from '../plants/a.js'\nexport type C = typeof a\n"
  }))
  assert.deepEqual(report.circles, [['photos/c.ts', 'plants/a.ts', 'plants/b.ts']])
  assert.equal(report.problems.length, 1)
  // The message walks the circle, so the imports that close it can be found without a hunt.
  assert.match(report.problems[0], /import circle: photos\/c\.ts -> plants\/a\.ts -> plants\/b\.ts -> photos\/c\.ts; break one of these imports/)
})

test('an import from a lower floor to a higher one is a problem, a dynamic import() and `typeof import()` too', () => {
  const report = checkImports(tree({
    ...layered,
    'store/sqlite.ts': "export const open = async () => (await import('../plants/routes.js')).route\n",
    'catalogue/query.ts': "export type Store = typeof import('../store/plant-store.js')\n"
  }))
  assert.deepEqual(report.problems.map((p) => p.split(': ')[0]), [
    'store/sqlite.ts (floor 1) imports plants/routes.ts (floor 3)',
    'catalogue/query.ts (floor 0) imports store/plant-store.ts (floor 1) (type only, not in ALLOWED_UPWARD)'
  ].sort((a, b) => a.localeCompare(b)))
  // Each says what to do about it.
  for (const problem of report.problems) assert.match(problem, /move what both need down .* or, for a type with no better home, list it in ALLOWED_UPWARD/)
})

test('a type-only upward import passes only when it is listed, and at most two may be', () => {
  const files = {
    ...layered,
    'store/plant-store.ts': "import type { Route } from '../plants/routes.js'\nexport const get = () => ({ id: 1 })\nexport type R = Route\n",
    'plants/routes.ts': "import { get } from '../store/plant-store.js'\nexport const route = () => get()\nexport type Route = typeof route\n"
  }
  const root = tree(files)
  assert.match(checkImports(root).problems.join('\n'), /store\/plant-store\.ts \(floor 1\) imports plants\/routes\.ts \(floor 3\) \(type only/)
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
    'trash/bin.ts': "import { gone } from './gone.js'\nexport const s = gone\n"
  }))
  assert.deepEqual(report.upward.map((edge) => [edge.from, edge.typeOnly]), [['store/named.ts', true]])
  assert.ok(report.problems.includes('trash: has no floor; give it one in FLOORS (scripts/check-imports.ts)'))
  assert.ok(report.problems.includes('trash/bin.ts: imports ./gone.js, which is no .ts file under src/'))
})

test('the command exits 1 on a problem and 0 on a clean tree (npm run lint runs it)', () => {
  const script = fileURLToPath(new URL('../../scripts/check-imports.ts', import.meta.url))
  const run = (root: string) => spawnSync(process.execPath, ['--import', 'tsx', script, root], { encoding: 'utf8' })
  const clean = run(tree(layered))
  assert.equal(clean.status, 0, clean.stderr)
  assert.match(clean.stdout, /4 files, 3 imports, no circle/)
  const broken = run(tree({ ...layered, 'catalogue/plant.ts': "import '../app.js'\nexport interface Plant { id: number }\n" }))
  assert.equal(broken.status, 1)
  assert.match(broken.stderr, /catalogue\/plant\.ts \(floor 0\) imports app\.ts \(floor 4\)/)
  assert.match(broken.stderr, /import circle: app\.ts -> plants\/routes\.ts -> store\/plant-store\.ts -> catalogue\/plant\.ts -> app\.ts/)
})

test('the ground floor imports no framework or engine, and the store no HTTP package: a package import there is a problem', () => {
  const report = checkImports(tree({
    ...layered,
    'catalogue/errors.ts': "import type { FastifyInstance } from 'fastify'\nimport { Type } from '@sinclair/typebox'\nimport { randomUUID } from 'node:crypto'\nexport type F = FastifyInstance\nexport const t = Type.String()\nexport const id = randomUUID\n",
    'store/sqlite.ts': "import Database from 'better-sqlite3'\nimport type { FastifyReply } from 'fastify'\nexport const d = Database\nexport type R = FastifyReply\n"
  }))
  assert.deepEqual(report.problems.map((p) => p.split(';')[0]), [
    'catalogue/errors.ts: imports the package fastify',
    'catalogue/errors.ts: imports the package @sinclair/typebox',
    'store/sqlite.ts: imports the package fastify'
  ])
})

test('outside store/, a file importing an engine (store/sqlite/, store/postgres/) is a problem, a dynamic or type-only import too; store/open/ may choose one', () => {
  const report = checkImports(tree({
    ...layered,
    'store/sqlite/snapshot.ts': 'export const snapshot = 1\n',
    'store/postgres/admin.ts': 'export class PostgresAdmin {}\n',
    'store/open/open-admin.ts': "export const open = async () => (await import('../postgres/admin.js')).PostgresAdmin\n",
    'cli/backup.ts': "import { snapshot } from '../store/sqlite/snapshot.js'\nimport { open } from '../store/open/open-admin.js'\nexport const b = [snapshot, open]\n",
    'cli/migrate.ts': "import type { PostgresAdmin } from '../store/postgres/admin.js'\nexport const m = async () => (await import('../store/sqlite/snapshot.js')).snapshot\nexport type A = PostgresAdmin\n"
  }))
  assert.deepEqual(report.problems.map((p) => p.split(':')[0]).sort(), [
    'cli/backup.ts imports store/sqlite/snapshot.ts',
    'cli/migrate.ts imports store/postgres/admin.ts (type only)',
    'cli/migrate.ts imports store/sqlite/snapshot.ts'
  ])
  // Each says where to go instead.
  for (const problem of report.problems) assert.match(problem, /only store\/ reaches into an engine .* goes through the store interface/)
})

test('the command line imports no engine package, but for a file listed with its reason (an import\'s scratch database is not the store)', () => {
  const files = {
    ...layered,
    'cli/import-scratch.ts': "import Database from 'better-sqlite3'\nexport const d = Database\n",
    'cli/migrate.ts': "import pg from 'pg'\nexport const p = pg\n"
  }
  assert.deepEqual(checkImports(tree(files), FLOORS, [], FORBIDDEN_PACKAGES, []).problems.map((p) => p.split(';')[0]), [
    'cli/import-scratch.ts: imports the package better-sqlite3',
    'cli/migrate.ts: imports the package pg'
  ])
  const allowed = [{ file: 'cli/import-scratch.ts', package: 'better-sqlite3', why: 'a test' }]
  assert.deepEqual(checkImports(tree(files), FLOORS, [], FORBIDDEN_PACKAGES, allowed).problems.map((p) => p.split(';')[0]), [
    'cli/migrate.ts: imports the package pg'
  ])
  // The repository's own list names the scratch space, with its reason.
  assert.ok(ALLOWED_PACKAGES.some((allow) => allow.file === 'cli/import-scratch.ts' && allow.why.length > 0))
})

test('a tree without floors (bench/): a circle of files is a problem, a type-only import closing it too; imports out of the tree are not followed', () => {
  const report = checkCircles(tree({
    'load.ts': "import { HISTORY } from './history.js'\nimport { encode } from '../src/plants/query.js'\nexport interface Figures { n: number }\nexport const a = [HISTORY, encode]\n",
    'history.ts': "import type { Figures } from './load.js'\nexport const HISTORY = 1\nexport type F = Figures\n",
    'run.ts': "import { a } from './load.js'\nexport const r = a\n"
  }))
  assert.deepEqual(report.circles, [['history.ts', 'load.ts']])
  assert.deepEqual(report.problems, ['import circle: history.ts -> load.ts -> history.ts; break one of these imports (move what both sides need into a module both can import)'])
  // The shared piece in a file of its own breaks it.
  const broken = checkCircles(tree({
    'history-plants.ts': 'export const HISTORY = 1\n',
    'load.ts': "import { HISTORY } from './history-plants.js'\nexport interface Figures { n: number }\nexport const a = HISTORY\n",
    'history.ts': "import type { Figures } from './load.js'\nimport { HISTORY } from './history-plants.js'\nexport type F = Figures\nexport const h = HISTORY\n"
  }))
  assert.deepEqual(broken.problems, [])
})

test('two folders that import each other are a circle though no two files are, named with the imports that cross; a file circle is not named twice', () => {
  const report = checkCircles(tree({
    'a/one.ts': "import { two } from '../b/two.js'\nexport const one = two\n",
    'b/two.ts': 'export const two = 2\n',
    'b/three.ts': "import { one } from '../a/one.js'\nexport const three = one\n"
  }))
  assert.deepEqual(report.circles, [])
  assert.deepEqual(report.folderCircles, [['a', 'b']])
  assert.deepEqual(report.problems, ['folder circle: a -> b -> a; a -> b (a/one.ts -> b/two.ts); b -> a (b/three.ts -> a/one.ts); ' +
    'move what both sides need into a folder both can import, or the file to the folder it belongs with'])
  const files = checkCircles(tree({ 'a/one.ts': "import { two } from '../b/two.js'\nexport const one = 1\nexport const t = two\n", 'b/two.ts': "import { one } from '../a/one.js'\nexport const two = one\n" }))
  assert.equal(files.problems.length, 1)
  assert.match(files.problems[0], /^import circle: a\/one\.ts -> b\/two\.ts -> a\/one\.ts/)
})

test('in src/ too, folders in a circle are a problem though no file circle and no floor is broken: routes beside routes, an engine beside its interface', () => {
  const report = checkImports(tree({
    ...layered,
    'photos/schemas.ts': 'export const Photo = 1\n',
    'plants/schemas.ts': "import { Photo } from '../photos/schemas.js'\nexport const Plant = [Photo]\n",
    'photos/order-route.ts': "import { route } from '../plants/routes.js'\nexport const order = route\n",
    'store/sqlite/reads.ts': "import type { Plant } from '../../catalogue/plant.js'\nimport { get } from '../plant-store.js'\nexport const read = (): Plant => get()\n",
    'store/open-store.ts': "import { read } from './sqlite/reads.js'\nexport const open = read\n"
  }))
  assert.deepEqual(report.circles, [])
  assert.deepEqual(report.folderCircles.sort(), [['photos', 'plants'], ['store', 'store/sqlite']])
  assert.deepEqual(report.problems.map((p) => p.split(';')[0]).sort(), ['folder circle: photos -> plants -> photos', 'folder circle: store -> store/sqlite -> store'])
  // The route that answers a plant moved beside the plant's routes, and the opener into a folder of its own: none.
  const moved = checkImports(tree({
    ...layered,
    'photos/schemas.ts': 'export const Photo = 1\n',
    'plants/schemas.ts': "import { Photo } from '../photos/schemas.js'\nexport const Plant = [Photo]\n",
    'plants/photo-order-route.ts': "import { route } from './routes.js'\nexport const order = route\n",
    'store/sqlite/reads.ts': "import type { Plant } from '../../catalogue/plant.js'\nimport { get } from '../plant-store.js'\nexport const read = (): Plant => get()\n",
    'store/open/open-store.ts': "import { read } from '../sqlite/reads.js'\nexport const open = read\n"
  }))
  assert.deepEqual(moved.problems, [])
})

test('with no argument the command checks src/ and bench/ of the repository: both free of circles', () => {
  const script = fileURLToPath(new URL('../../scripts/check-imports.ts', import.meta.url))
  const run = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8' })
  assert.equal(run.status, 0, run.stderr)
  assert.match(run.stdout, /^check-imports: src\/ \d+ files, \d+ imports, no circle of files or folders, 0 allowed upward$/m)
  assert.match(run.stdout, /^check-imports: bench\/ \d+ files, \d+ imports, no circle of files or folders$/m)
})
