// `npm run build`: what the package ships. Plain JavaScript, so that it needs nothing but the
// TypeScript compiler and esbuild (development dependencies: the build runs in a checkout, never on
// a server).
//  - dist/src/: the service and the CLI compiled by tsc (tsconfig.build.json holds only src/);
//  - dist/bundle/: the service bundled by esbuild into one file (and its SQLite writer thread
//    into another): the package's `plant-catalogue` command and `npm start`. Node 20 has no module
//    compile cache, and resolving, reading and compiling some 900 small modules was half of a cold
//    start (bench/cold-start.ts measures both builds);
//  - the PostgreSQL migrations beside their compiled module (they are read from there at run time);
//  - both commands executable, so `./dist/src/cli/plants.js` runs as it is;
//  - dist/.build-stamp, which `npm start` compares with the sources (scripts/ensure-build.mjs).
// Other build steps may add folders under dist/: the package ships all of dist/ (package.json `files`).
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, 'dist')

// A module deleted from src/ must not live on in the package: the compiler's tree starts clean.
rmSync(join(out, 'src'), { recursive: true, force: true })
rmSync(join(out, 'bundle'), { recursive: true, force: true })
rmSync(join(out, '.build-stamp'), { force: true })
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' })

// Imported only once tsc has passed: a type error stops the build before anything is bundled.
const { build } = await import('esbuild')
await build({
  absWorkingDir: root,
  // The writer thread is started from its own file, found beside the module that starts it
  // (src/store/sqlite/group-commit.ts: new URL('./writer-thread.js', import.meta.url)).
  entryPoints: { server: 'src/server.ts', 'writer-thread': 'src/store/sqlite/writer-thread.ts' },
  outdir: join(out, 'bundle'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // A dynamic import() stays one (the PostgreSQL store is a chunk of its own, loaded only with
  // DATABASE_URL): without splitting, esbuild inlines it and hoists its `import pg` to the top.
  splitting: true,
  // Left to node_modules: native addons (better-sqlite3, sharp), which find their binaries beside
  // their own code; pino, whose transports (pino-pretty on a terminal) run files of their own in a
  // worker; Swagger UI, which serves its static folder from beside its code; and pg, loaded only
  // when DATABASE_URL names PostgreSQL (and whose optional pg-native must stay unresolved).
  external: ['better-sqlite3', 'sharp', 'pg', 'pino', 'pino-pretty', '@fastify/swagger-ui'],
  // The bundled CommonJS packages call require() for node's own modules, which an ES module lacks.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  legalComments: 'none',
  logLevel: 'warning'
})
// A bundled package that finds files beside its own code (__dirname) would look in dist/bundle/.
// @fastify/swagger's readPackageJson is the one known: it fills OpenAPI info the app already gives,
// and answers {} when the file is not there. Any other is a package to add to `external` above.
const bundled = readFileSync(join(out, 'bundle/server.js'), 'utf8')
const known = 'path.join(__dirname, "..", "..", "package.json")'
if (bundled.split(known).join('').match(/\b__(dirname|filename)\b/)) {
  throw new Error('dist/bundle/server.js uses __dirname or __filename: mark that package external in scripts/build.mjs')
}

// The PostgreSQL migrations are read from beside the module that applies them, in both builds.
const migrations = 'src/store/postgres/migrations'
for (const dir of [migrations, 'bundle/migrations']) {
  mkdirSync(join(out, dir), { recursive: true })
  for (const name of readdirSync(join(root, migrations)).filter((n) => n.endsWith('.sql'))) {
    cpSync(join(root, migrations, name), join(out, dir, name))
  }
}
for (const bin of ['src/server.js', 'src/cli/plants.js', 'bundle/server.js']) chmodSync(join(out, bin), 0o755)
writeFileSync(join(out, '.build-stamp'), `${new Date().toISOString()}\n`)
