// `npm run build`: what the package ships. Plain JavaScript, so that it needs nothing but the
// TypeScript compiler (a development dependency: the build runs in a checkout, never on a server).
//  - dist/src/: the service and the CLI compiled by tsc (tsconfig.build.json holds only src/);
//  - the PostgreSQL migrations beside their compiled module (they are read from there at run time);
//  - both commands executable, so `./dist/src/cli/plants.js` runs as it is;
//  - dist/.build-stamp, which `npm start` compares with the sources (scripts/ensure-build.mjs).
// Other build steps may add folders under dist/: the package ships all of dist/ (package.json `files`).
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, 'dist')

// A module deleted from src/ must not live on in the package: the compiler's tree starts clean.
rmSync(join(out, 'src'), { recursive: true, force: true })
rmSync(join(out, '.build-stamp'), { force: true })
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' })

const migrations = 'src/store/postgres/migrations'
mkdirSync(join(out, migrations), { recursive: true })
for (const name of readdirSync(join(root, migrations)).filter((n) => n.endsWith('.sql'))) {
  cpSync(join(root, migrations, name), join(out, migrations, name))
}
for (const bin of ['src/server.js', 'src/cli/plants.js']) chmodSync(join(out, bin), 0o755)
writeFileSync(join(out, '.build-stamp'), `${new Date().toISOString()}\n`)
