// `npm run build`: what the package ships. Plain JavaScript, so that it needs nothing but the
// TypeScript compiler and esbuild (development dependencies: the build runs in a checkout, never on
// a server).
//  - dist/src/: the service and the CLI compiled by tsc (tsconfig.build.json holds only src/), and
//    the typed client's declarations (tsconfig.client.json): `import … from 'plant-catalogue/client'`;
//  - dist/bundle/: the service bundled by esbuild into one file (and its SQLite writer thread
//    into another): the package's `plant-catalogue` command and `npm start`. Node 20 has no module
//    compile cache, and resolving, reading and compiling some 900 small modules was half of a cold
//    start (bench/cold-start.ts measures both builds);
//  - the PostgreSQL migrations beside their compiled module (they are read from there at run time);
//  - both commands executable, so `./dist/src/cli/plants.js` runs as it is;
//  - dist/.build-stamp, which `npm start` compares with the sources (scripts/ensure-build.mjs).
// Other build steps may add folders under dist/: the package ships all of dist/ (package.json `files`).
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, 'dist')

// A module deleted from src/ must not live on in the package: the compiler's tree starts clean.
rmSync(join(out, 'src'), { recursive: true, force: true })
rmSync(join(out, 'bundle'), { recursive: true, force: true })
rmSync(join(out, '.build-stamp'), { force: true })
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
// tsc emits despite type errors, and so does the bundle below (esbuild does not check types): a
// type error fails the build, but what was emitted can still be run and measured (npm run bench).
let typeErrors
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' })
  // The typed client's declarations beside its JavaScript: the package's `plant-catalogue/client`.
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.client.json')], { stdio: 'inherit' })
  // The generated types are a declaration file already, which tsc reads but never copies to outDir.
  cpSync(join(root, 'src/client/generated'), join(out, 'src/client/generated'), { recursive: true })
} catch (err) {
  typeErrors = err
}

const { build } = await import('esbuild')

// Bundled packages that read files of their own from beside their code: Swagger UI serves its
// static folder and logo, @fastify/swagger reads its package.json. In the bundle __dirname is
// not theirs, so these files get the real one, resolved where the package is installed (a direct
// dependency, so found from dist/bundle/ in a checkout and in an install alike).
const OWN_FILES = /[\\/]node_modules[\\/]@fastify[\\/](swagger|swagger-ui)[\\/]/
const USES_DIRNAME = /\b__(dirname|filename)\b/
/** Bundled files of any other package that use __dirname: each would look in dist/bundle/ for its files. */
const strays = []
const ownDirname = {
  name: 'own-dirname',
  setup (esbuild) {
    esbuild.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8')
      if (!USES_DIRNAME.test(source)) return undefined
      if (!OWN_FILES.test(args.path)) {
        strays.push(relative(root, args.path))
        return undefined
      }
      // The package's own path after its node_modules (esbuild hands the real path: with a linked
      // node_modules, a path relative to the checkout's would climb out of the bundle's folder).
      const specifier = args.path.split(/[\\/]node_modules[\\/]/).pop().split('\\').join('/')
      return {
        contents: `var __filename = require.resolve(${JSON.stringify(specifier)}), __dirname = require('node:path').dirname(__filename);\n${source}`,
        loader: 'js',
        resolveDir: dirname(args.path)
      }
    })
  }
}

await build({
  absWorkingDir: root,
  // The SQLite threads and the image worker are started from their own files, found beside the
  // module that starts them (src/store/sqlite/threads.ts: new URL('./writer-thread.js',
  // import.meta.url); src/photos/image-worker.ts: './image-process.js').
  entryPoints: {
    server: 'src/server.ts',
    'writer-thread': 'src/store/sqlite/writer-thread.ts',
    'reader-thread': 'src/store/sqlite/reader-thread.ts',
    'image-process': 'src/photos/image-process.ts'
  },
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
  // worker; and pg, loaded only when DATABASE_URL names PostgreSQL (and whose optional pg-native
  // must stay unresolved). Minifying was tried: no less CPU at start, and unreadable stack traces.
  external: ['better-sqlite3', 'sharp', 'pg', 'pino', 'pino-pretty'],
  plugins: [ownDirname],
  // The bundled CommonJS packages call require() for node's own modules, which an ES module lacks.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  legalComments: 'none',
  logLevel: 'warning'
})
if (strays.length > 0) {
  throw new Error(`bundled code uses __dirname or __filename: ${strays.join(', ')}. Mark its package external, or add it to OWN_FILES, in scripts/build.mjs`)
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
if (typeErrors) throw typeErrors // and no stamp: npm start builds again
writeFileSync(join(out, '.build-stamp'), `${new Date().toISOString()}\n`)
