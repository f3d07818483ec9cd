// The house's rule, checked on every lint: no import circle in src/ or bench/, among files or among
// folders, and in src/ no import from a lower floor to a higher one except the few listed in
// ALLOWED_UPWARD, each with its reason.
// Run: node --import tsx scripts/check-imports.ts [src-dir [circles-only-dir…]] (default: src bench)
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

// The floor of each room (a folder under src/, or a file at its top). A room may import its own
// floor and those below; a new room must be given a floor here before it is imported.
export const FLOORS: Record<string, number> = {
  catalogue: 0, // the catalogue's own words: records, statuses, sorts, the query model, domain errors
  store: 1, // the store interface and its engines
  version: 2,
  config: 2,
  http: 2, // what every route shares, a folder per concern (schemas/, problems/, input/, auth/, connections/, …)
  plants: 3,
  photos: 3,
  feed: 3,
  ops: 3,
  page: 3,
  client: 3,
  stock: 3, // locations, levels, movements: their routes and schemas
  webhooks: 3, // subscriptions, the deliverer, signing, the SSRF-safe client
  keys: 3, // API keys: the key cache the auth hook is given (app.ts wires it), and their admin routes
  app: 4,
  server: 4,
  cli: 4
}

// Packages a room must not import: the ground floor speaks no framework and no engine, the store
// speaks no HTTP, and the command line reaches a catalogue's database only through the store.
export const FORBIDDEN_PACKAGES: Record<string, string[]> = {
  catalogue: ['fastify', '@fastify/', '@sinclair/typebox', 'better-sqlite3', 'pg'],
  store: ['fastify', '@fastify/', '@sinclair/typebox'],
  cli: ['better-sqlite3', 'pg']
}

export interface AllowedPackage { file: string, package: string, why: string }

// A file that may import a package its room must not, each with its reason.
export const ALLOWED_PACKAGES: AllowedPackage[] = [
  { file: 'cli/import-scratch.ts', package: 'better-sqlite3', why: 'an import\'s scratch space, a temporary database of its own that holds no catalogue: not the store' }
]

// The engines' folders: only the store itself (its interface's implementations, and store/open/,
// which picks one) imports them. Every entry point goes through the store interface.
export const ENGINE_FOLDERS = ['store/sqlite', 'store/postgres']

export interface AllowedUpward { from: string, to: string, why: string }

// At most two, type-only, each justified in one line.
export const ALLOWED_UPWARD: AllowedUpward[] = []

export const MAX_ALLOWED_UPWARD = 2

export interface ImportEdge { from: string, to: string, typeOnly: boolean }

export interface ImportReport {
  files: string[]
  edges: ImportEdge[]
  circles: string[][]
  /** Circles of folders that no circle of files explains: each folder reaches the others. */
  folderCircles: string[][]
  upward: ImportEdge[]
  problems: string[]
}

const toPosix = (path: string): string => path.split(sep).join('/')

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

// `import { type A, type B } from` is erased like `import type`: it counts as type-only.
function isTypeOnlyImport (node: ts.ImportDeclaration): boolean {
  const clause = node.importClause
  if (clause === undefined) return false
  if (clause.isTypeOnly) return true
  const bindings = clause.namedBindings
  return clause.name === undefined && bindings !== undefined && ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 && bindings.elements.every((element) => element.isTypeOnly)
}

function isTypeOnlyExport (node: ts.ExportDeclaration): boolean {
  if (node.isTypeOnly) return true
  const clause = node.exportClause
  return clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 &&
    clause.elements.every((element) => element.isTypeOnly)
}

// Every module a file names: static imports and re-exports, `import()` calls, `typeof import()`.
function specifiersOf (path: string): Array<{ specifier: string, typeOnly: boolean }> {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
  const found: Array<{ specifier: string, typeOnly: boolean }> = []
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: isTypeOnlyImport(node) })
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: isTypeOnlyExport(node) })
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments
      if (argument !== undefined && ts.isStringLiteralLike(argument)) found.push({ specifier: argument.text, typeOnly: false })
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

// A relative specifier names a .ts file under NodeNext as `./x.js`; packages are not ours to check.
function resolveSpecifier (fromFile: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined
  return resolve(dirname(fromFile), specifier).replace(/\.js$/, '.ts')
}

export function roomOf (file: string): string {
  const [first = ''] = file.split('/')
  return first.replace(/\.ts$/, '')
}

// A nested folder is a folder of its own (store/sqlite/ apart from store/); a file at the top is one
// too, as it is a room of its own for the floors.
export function folderOf (file: string): string {
  const slash = file.lastIndexOf('/')
  return slash < 0 ? file.replace(/\.ts$/, '') : file.slice(0, slash)
}

// Tarjan's strongly connected components: each component of more than one file is a circle
// (a file that imports itself is one too).
function findCircles (files: string[], edges: ImportEdge[]): string[][] {
  const next = new Map<string, string[]>(files.map((file) => [file, []]))
  for (const edge of edges) next.get(edge.from)?.push(edge.to)
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const circles: string[][] = []
  let counter = 0
  const connect = (file: string): void => {
    index.set(file, counter)
    low.set(file, counter)
    counter++
    stack.push(file)
    onStack.add(file)
    for (const to of next.get(file) ?? []) {
      if (!index.has(to)) {
        connect(to)
        low.set(file, Math.min(low.get(file)!, low.get(to)!))
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file)!, index.get(to)!))
      }
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== file)
    if (component.length > 1 || (next.get(file) ?? []).includes(file)) circles.push(component.sort())
  }
  for (const file of files) if (!index.has(file)) connect(file)
  return circles
}

// One closed path through a circle's files, from its first file back to it: the imports to look at.
function cycleThrough (circle: string[], edges: ImportEdge[]): string[] {
  const members = new Set(circle)
  const start = circle[0]
  const cameFrom = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const file = queue.shift()!
    for (const edge of edges) {
      if (edge.from !== file || !members.has(edge.to)) continue
      if (edge.to === start) {
        const path = [start]
        for (let at: string | undefined = file; at !== undefined && at !== start; at = cameFrom.get(at)) path.splice(1, 0, at)
        return [...path, start]
      }
      if (!cameFrom.has(edge.to)) {
        cameFrom.set(edge.to, file)
        queue.push(edge.to)
      }
    }
  }
  return circle
}

interface ImportGraph { files: string[], edges: ImportEdge[], problems: string[] }

function importGraph (dir: string, label: string, forbidden: Record<string, string[]>, allowedPackages: AllowedPackage[] = []): ImportGraph {
  const root = resolve(dir)
  const files = sourceFiles(root).map((path) => toPosix(relative(root, path))).sort()
  const known = new Set(files)
  const problems: string[] = []
  const edges: ImportEdge[] = []
  for (const file of files) {
    for (const { specifier, typeOnly } of specifiersOf(join(root, file))) {
      const target = resolveSpecifier(join(root, file), specifier)
      if (target === undefined) {
        const banned = (forbidden[roomOf(file)] ?? []).find((p) => specifier === p || specifier.startsWith(p.endsWith('/') ? p : `${p}/`))
        const allowed = allowedPackages.some((allow) => allow.file === file && allow.package === banned)
        if (banned !== undefined && !allowed) problems.push(`${file}: imports the package ${specifier}; ${roomOf(file)}/ must not import ${forbidden[roomOf(file)].join(', ')} (keep it in the floor that uses it)`)
        continue
      }
      const to = toPosix(relative(root, target))
      if (to.startsWith('..')) continue // outside the tree (package.json, bench/ reading src/)
      // A declaration file (the generated client's types) imports nothing: no edge to follow.
      if (!known.has(to) && existsSync(target.replace(/\.ts$/, '.d.ts'))) continue
      if (!known.has(to)) {
        problems.push(`${file}: imports ${specifier}, which is no .ts file under ${label}`)
        continue
      }
      edges.push({ from: file, to, typeOnly })
    }
  }
  return { files, edges, problems }
}

// Folders in a circle though no two of their files are: a file of one imports a file of the next,
// round to the first. Each is named with the imports that cross between its folders. A folder
// circle that a file circle already explains is left to that file circle's message.
function folderCircleProblems (files: string[], edges: ImportEdge[], fileCircles: string[][]): { circles: string[][], problems: string[] } {
  const folders = [...new Set(files.map(folderOf))].sort()
  const crossing = edges.filter((edge) => folderOf(edge.from) !== folderOf(edge.to))
  const folderEdges = crossing.map((edge) => ({ from: folderOf(edge.from), to: folderOf(edge.to), typeOnly: edge.typeOnly }))
  const explained = (circle: string[]): boolean => fileCircles.some((files) =>
    new Set(files.map(folderOf)).size > 1 && files.every((file) => circle.includes(folderOf(file))))
  const circles = findCircles(folders, folderEdges).filter((circle) => !explained(circle))
  const problems = circles.map((circle) => {
    const path = cycleThrough(circle, folderEdges)
    const steps = path.slice(1).map((to, i) => {
      const from = path[i]
      const imports = crossing.filter((edge) => folderOf(edge.from) === from && folderOf(edge.to) === to).map((edge) => `${edge.from} -> ${edge.to}`)
      const more = imports.length > 3 ? ` and ${imports.length - 3} more` : ''
      return `${from} -> ${to} (${imports.slice(0, 3).join(', ')}${more})`
    })
    return `folder circle: ${path.join(' -> ')}; ${steps.join('; ')}; move what both sides need into a folder both can import, or the file to the folder it belongs with`
  })
  return { circles, problems }
}

/** Circles alone, among files and among folders: for a tree without floors (bench/). */
export function checkCircles (dir: string): ImportReport {
  const { files, edges, problems } = importGraph(dir, `${basename(resolve(dir))}/`, {})
  const circles = findCircles(files, edges)
  for (const circle of circles) {
    problems.push(`import circle: ${cycleThrough(circle, edges).join(' -> ')}; break one of these imports (move what both sides need into a module both can import)`)
  }
  const folders = folderCircleProblems(files, edges, circles)
  problems.push(...folders.problems)
  return { files, edges, circles, folderCircles: folders.circles, upward: [], problems }
}

export function checkImports (srcDir: string, floors = FLOORS, allowed = ALLOWED_UPWARD, forbidden = FORBIDDEN_PACKAGES, allowedPackages = ALLOWED_PACKAGES): ImportReport {
  const { files, edges, problems } = importGraph(srcDir, 'src/', forbidden, allowedPackages)

  const engineOf = (file: string): string | undefined => ENGINE_FOLDERS.find((folder) => file.startsWith(`${folder}/`))
  for (const edge of edges) {
    const engine = engineOf(edge.to)
    if (engine === undefined || roomOf(edge.from) === 'store') continue
    problems.push(`${edge.from} imports ${edge.to}${edge.typeOnly ? ' (type only)' : ''}: only store/ reaches into an engine (${engine}/); ` +
      `${roomOf(edge.from)}/ goes through the store interface (store/plant-store.ts, store/admin-store.ts, opened by store/open/): ` +
      'add what it needs to that interface, implemented inside each engine')
  }

  const floorOf = (file: string): number | undefined => floors[roomOf(file)]
  for (const room of new Set(files.map(roomOf))) {
    if (floors[room] === undefined) problems.push(`${room}: has no floor; give it one in FLOORS (scripts/check-imports.ts)`)
  }

  if (allowed.length > MAX_ALLOWED_UPWARD) problems.push(`${allowed.length} upward imports allowed; at most ${MAX_ALLOWED_UPWARD}`)
  const isAllowed = (edge: ImportEdge): boolean =>
    edge.typeOnly && allowed.some((allow) => allow.from === edge.from && allow.to === edge.to)
  const upward = edges.filter((edge) => (floorOf(edge.to) ?? 0) > (floorOf(edge.from) ?? Infinity))
  for (const edge of upward) {
    if (isAllowed(edge)) continue
    problems.push(`${edge.from} (floor ${floorOf(edge.from)}) imports ${edge.to} (floor ${floorOf(edge.to)})${edge.typeOnly ? ' (type only, not in ALLOWED_UPWARD)' : ''}: ` +
      'a lower floor must not know a higher one; move what both need down (the catalogue\'s words to catalogue/, what routes share to http/), ' +
      'or, for a type with no better home, list it in ALLOWED_UPWARD with its reason')
  }

  // An allowed upward import would close a circle with the downward one it answers: leave it out.
  const counted = edges.filter((edge) => !isAllowed(edge))
  const circles = findCircles(files, counted)
  for (const circle of circles) {
    problems.push(`import circle: ${cycleThrough(circle, edges).join(' -> ')}; break one of these imports (move what both sides need into a module both can import)`)
  }
  // An upward import is a problem of its own already: a folder circle only it closes is not named again.
  const folders = folderCircleProblems(files, counted.filter((edge) => !upward.includes(edge)), circles)
  problems.push(...folders.problems)
  return { files, edges, circles, folderCircles: folders.circles, upward, problems }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const repo = join(dirname(fileURLToPath(import.meta.url)), '..')
  const [srcDir = join(repo, 'src'), ...others] = process.argv.slice(2)
  const circlesOnly = process.argv.length > 2 ? others : [join(repo, 'bench')]
  for (const [dir, report] of [[srcDir, checkImports(srcDir)] as const, ...circlesOnly.map((dir) => [dir, checkCircles(dir)] as const)]) {
    const name = `${basename(resolve(dir))}/`
    for (const problem of report.problems) process.stderr.write(`${name}${problem}\n`)
    if (report.problems.length > 0) {
      process.stderr.write(`check-imports: ${report.problems.length} problem(s) in ${report.files.length} files of ${name}\n`)
      process.exitCode = 1
    } else {
      const kept = `no circle of files or folders${dir === srcDir ? `, ${report.upward.length} allowed upward` : ''}`
      process.stdout.write(`check-imports: ${name} ${report.files.length} files, ${report.edges.length} imports, ${kept}\n`)
    }
  }
}
