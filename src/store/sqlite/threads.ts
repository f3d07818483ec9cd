import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'

// Run from source (tests, tools under tsx), a thread's module is the .ts file next to this one.
// Loaded through tsx in the thread, it compiled and resolved its modules again in every thread, and
// the tests open a store, so a writer thread, hundreds of times: instead its modules are bundled by
// esbuild (a development dependency, as tsx is) the first time a process starts that thread, and
// every later thread of the process runs that code. Built, each thread is a file of its own beside
// the module that starts it (scripts/build.mjs names them).
const FROM_SOURCE = import.meta.url.endsWith('.ts')

/** Each thread's bundled code, made once a process (from source only). */
const bundled = new Map<string, string>()

/** The thread at `path` (a .ts file) and its modules as one script; packages are required from where the file is. */
function bundledCode (path: string): string {
  let code = bundled.get(path)
  if (code === undefined) {
    const require = createRequire(path)
    const { buildSync } = require('esbuild') as typeof import('esbuild')
    const { outputFiles } = buildSync({ entryPoints: [path], bundle: true, platform: 'node', format: 'cjs', packages: 'external', write: false, logLevel: 'silent' })
    code = `(function (require) {\n${outputFiles[0].text}\n})(require('node:module').createRequire(${JSON.stringify(path)}))`
    bundled.set(path, code)
  }
  return code
}

/** Starts the thread `name` (`writer-thread`, `reader-thread`) of this folder. */
export function startThread (name: string, workerData: unknown): Worker {
  const file = new URL(`./${name}${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url)
  return FROM_SOURCE
    ? new Worker(bundledCode(fileURLToPath(file)), { eval: true, workerData, execArgv: [] })
    : new Worker(file, { workerData })
}
