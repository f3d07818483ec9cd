// `npm start`'s first step, and `plants`'s (bin/plants.js): build when the build is missing or older than the sources, so a
// checkout starts what it holds. Shipped in the package too, where there are no sources to build
// (src/ holds TypeScript, which the package leaves out): there it does nothing.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const stamp = join(root, 'dist', '.build-stamp')
// What the build reads; web/ is the staff page's sources where present.
const inputs = ['src', 'web', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs']

function newest (path) {
  if (!existsSync(path)) return 0
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return readdirSync(path).reduce((m, name) => Math.max(m, newest(join(path, name))), stat.mtimeMs)
}

if (existsSync(join(root, 'src')) && (!existsSync(stamp) || inputs.some((p) => newest(join(root, p)) > statSync(stamp).mtimeMs))) {
  if (!existsSync(join(root, 'node_modules', 'typescript')) || !existsSync(join(root, 'node_modules', 'esbuild'))) {
    process.stderr.write('plant-catalogue: the build (dist/) is missing or older than src/, and the TypeScript compiler is not\n' +
      'installed, or esbuild is not (development dependencies, which npm ci --omit=dev leaves out). In a checkout, run `npm ci` and\n' +
      '`npm start`; on a server, install the packed tarball instead (`npm pack`, then\n' +
      '`npm install --omit=dev plant-catalogue-VERSION.tgz`): it holds the compiled service. See the README.\n')
    process.exit(1)
  }
  process.stderr.write('plant-catalogue: building (dist/ is missing or older than the sources)\n')
  // The build's output goes to standard error: standard output is the command's (an export's rows).
  execFileSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '-s', 'build'], { cwd: root, stdio: ['ignore', 2, 2] })
}
