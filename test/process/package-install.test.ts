import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { built, freePort, ROOT, send, tempDir } from '../helpers/process.js'

// The package as a server gets it: `npm pack`, then `npm install --omit=dev` of the tarball into an
// empty folder, and both commands run from there, with no compiler or development dependency about.

const run = promisify(execFile)
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string, version: string, devDependencies: Record<string, string> }
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> }
const INSTALL_DOC = readFileSync(join(ROOT, 'docs/install.md'), 'utf8')
/** The folder install's package.json exactly as docs/install.md has the reader write it (its `echo … > package.json` line). */
const readmeProject = (): string => {
  const line = /^echo '(\{.*\})' > package\.json$/m.exec(INSTALL_DOC)
  assert.ok(line, 'docs/install.md shows the package.json of a folder install')
  return line[1]
}

// The test runner's flags (--import tsx) must not reach the commands: they run as installed.
const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ['NODE_OPTIONS', 'NODE_TEST_CONTEXT', 'DATABASE_URL', 'DATA_DIR', 'API_KEYS', 'API_KEYS_FILE', 'WORKERS', 'PORT', 'HOST']) delete env[name]
  return Object.assign(env, extra)
}

/** Every installed package's name, anywhere in the tree (nested node_modules included). */
function installedPackages (nodeModules: string, found = new Set<string>()): Set<string> {
  if (!existsSync(nodeModules)) return found
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue
    const names = entry.startsWith('@') ? readdirSync(join(nodeModules, entry)).map((n) => `${entry}/${n}`) : [entry]
    for (const name of names) {
      found.add(name)
      installedPackages(join(nodeModules, name, 'node_modules'), found)
    }
  }
  return found
}

/** Sizes in KiB of the biggest entries of a folder (du), for the report. */
async function biggest (dir: string, count: number): Promise<string> {
  const { stdout } = await run('du', ['-sk', ...readdirSync(dir).map((n) => join(dir, n))])
  return stdout.trim().split('\n').map((l) => l.split('\t')).map(([kb, path]) => ({ kb: Number(kb), name: relative(dir, path) }))
    .sort((a, b) => b.kb - a.kb).slice(0, count).map((e) => `${e.name} ${(e.kb / 1024).toFixed(1)} MiB`).join(', ')
}

/**
 * A copy of the checkout at `dir` as it stands (sources, scripts, the build; not data, test output
 * or git), sharing its node_modules: a pack or a build there leaves the checkout's dist/ alone.
 */
function copyOfCheckout (dir: string): string {
  const skip = new Set(['node_modules', '.git', 'test-output', 'data'])
  for (const entry of readdirSync(ROOT)) {
    if (!skip.has(entry) && !entry.endsWith('.tgz')) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true, preserveTimestamps: true })
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  return dir
}

describe('the packed tarball, installed with --omit=dev', { timeout: 600_000 }, () => {
  const work = tempDir('plants-package')
  const install = join(work.path, 'install')
  let tarball: string
  let packed: Array<{ path: string, size: number }>
  let installOutput = ''

  before(async () => {
    // Packed from a copy of the checkout holding the build the tests run against (npm test builds
    // once before them): a pack in the checkout would run prepack, rebuilding dist/ under the files
    // that run beside this one. prepack is the same build, from the same sources.
    assert.equal((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.prepack, 'npm run build')
    built('dist/.build-stamp')
    const checkout = copyOfCheckout(join(work.path, 'packed'))
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work.path], { cwd: checkout, env: cleanEnv(), maxBuffer: 16 * 1024 * 1024 })
    const report = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ filename: string, files: Array<{ path: string, size: number }> }>
    tarball = join(work.path, report[0].filename)
    packed = report[0].files

    // better-sqlite3's install script runs as on any server (prebuild-install, else node-gyp). It is
    // handed the addon this checkout's own `npm ci` compiled, through prebuild-install's
    // local-prebuild folder: the same source, compiler and Node ABI, without a second compile of
    // SQLite (some 80 s of CPU). Every other package comes from npm's cache when it is warm.
    const prebuilds = join(work.path, 'prebuilds')
    mkdirSync(prebuilds)
    const addon = JSON.parse(readFileSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string }
    await run('tar', ['czf', join(prebuilds, `better-sqlite3-v${addon.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`),
      '-C', join(ROOT, 'node_modules/better-sqlite3'), 'build/Release/better_sqlite3.node'])
    mkdirSync(install)
    // A folder install is a project of its own: its package.json approves the one install script
    // the service needs, as npm 11 asks (a global install passes --allow-scripts=better-sqlite3).
    // It is docs/install.md's, so what that page tells an installing project to approve is what is tested.
    writeFileSync(join(install, 'package.json'), readmeProject())
    const started = Date.now()
    const result = await run('npm', ['install', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', tarball], {
      cwd: install, env: cleanEnv({ npm_config_better_sqlite3_local_prebuilds: prebuilds }), maxBuffer: 16 * 1024 * 1024
    })
    installOutput = result.stdout + result.stderr
    console.log(`npm install --omit=dev of the tarball took ${((Date.now() - started) / 1000).toFixed(1)} s`)
  })

  after(() => work.remove())

  it('holds the compiled service, its migrations and every file the build put under dist/, and no TypeScript, test or bench', async () => {
    const paths = packed.map((f) => f.path)
    assert.ok(paths.includes('dist/src/server.js') && paths.includes('dist/src/cli/plants.js'))
    assert.ok(paths.some((p) => /^dist\/src\/store\/postgres\/migrations\/\d+_.*\.sql$/.test(p)), 'PostgreSQL migrations travel')
    assert.deepEqual(paths.filter((p) => /(?<!\.d)\.ts$|^test\/|^bench\/|^src\//.test(p)), [])
    // Declarations only for what a consumer imports: the typed client.
    assert.deepEqual(paths.filter((p) => p.endsWith('.d.ts')).sort(), ['dist/src/client/generated/openapi.d.ts', 'dist/src/client/plant-client.d.ts'])
    assert.ok(paths.includes('bin/plants.js') && paths.includes('scripts/ensure-build.mjs'))
    // Whatever the build emits under dist/ (the staff page's assets included) travels, source maps aside.
    const emitted: string[] = []
    const walk = (dir: string): void => {
      for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        const path = `${dir}/${entry.name}`
        if (entry.isDirectory()) walk(path)
        else if (!path.endsWith('.map')) emitted.push(path)
      }
    }
    walk('dist')
    assert.deepEqual(emitted.filter((p) => !paths.includes(p)), [])
    const tarKiB = statSync(tarball).size / 1024
    const bySize = [...packed].sort((a, b) => b.size - a.size).slice(0, 4).map((f) => `${f.path} ${(f.size / 1024).toFixed(1)} KiB`).join(', ')
    console.log(`tarball: ${tarKiB.toFixed(1)} KiB, ${packed.length} files; largest unpacked: ${bySize}`)
    // docs/install.md states a bound rather than a figure that each new file would make stale.
    const bound = /The tarball is \*\*under (\d+) MiB\*\*/.exec(INSTALL_DOC)
    assert.ok(bound, 'docs/install.md states the tarball\'s size')
    assert.ok(tarKiB < Number(bound[1]) * 1024, `the tarball is ${tarKiB.toFixed(1)} KiB; docs/install.md says under ${bound[1]} MiB`)
  })

  it('the build leaves both commands executable in a checkout', async () => {
    for (const bin of ['dist/src/server.js', 'dist/src/cli/plants.js']) {
      assert.ok((statSync(join(ROOT, bin)).mode & 0o111) !== 0, `${bin} is executable`)
    }
    const { stdout } = await run(join(ROOT, 'dist/src/cli/plants.js'), ['--version'], { env: cleanEnv() })
    assert.equal(stdout, `${pkg.version}\n`)
  })

  it('installs with no development dependency, no compiler and no warning about install scripts', async () => {
    assert.doesNotMatch(installOutput, /install-scripts|allowScripts/, installOutput)
    // What docs/install.md has an installing project approve covers every install script of the production tree.
    const { stdout: unapproved } = await run('npm', ['install-scripts', 'ls', '--json'], { cwd: install, env: cleanEnv() })
    assert.deepEqual(JSON.parse(unapproved).allowScripts, [], `npm install-scripts ls: ${unapproved}`)
    const present = installedPackages(join(install, 'node_modules'))
    assert.ok(present.has(pkg.name) && present.has('better-sqlite3') && present.has('fastify'))
    // Dev-only: every copy the lock file holds of it is marked dev (a name may be both, at two versions).
    const nameOf = (path: string): string => path.replace(/^.*node_modules\//, '')
    const production = new Set(Object.entries(lock.packages).filter(([path, p]) => path !== '' && !p.dev).map(([path]) => nameOf(path)))
    const devOnly = new Set(Object.entries(lock.packages).filter(([, p]) => p.dev).map(([path]) => nameOf(path)).filter((name) => !production.has(name)))
    assert.ok(devOnly.has('typescript') && devOnly.has('tsx') && devOnly.has('esbuild'))
    assert.deepEqual([...present].filter((name) => devOnly.has(name)), [])
    const { stdout } = await run('du', ['-sk', install])
    const top = await biggest(join(install, 'node_modules'), 6)
    const footprintMiB = Number(stdout.split('\t')[0]) / 1024
    console.log(`installed footprint: ${footprintMiB.toFixed(1)} MiB in ${present.size} packages; largest: ${top}`)
    // docs/install.md states a bound, not a figure that goes stale with every dependency update.
    const stated = /The install is \*\*under (\d+) MiB\*\*/.exec(INSTALL_DOC)
    assert.ok(stated, 'docs/install.md states the install footprint as "under N MiB"')
    assert.ok(footprintMiB < Number(stated[1]), `the install is ${footprintMiB.toFixed(1)} MiB; docs/install.md says under ${stated[1]} MiB`)
  })

  it('plant-catalogue serves from the install on a fresh data folder, plants works beside it, and SIGTERM stops it cleanly', async () => {
    const bin = join(install, 'node_modules/.bin')
    assert.equal((await run(join(bin, 'plant-catalogue'), ['--version'], { env: cleanEnv() })).stdout, `${pkg.version}\n`)
    assert.equal((await run(join(bin, 'plants'), ['--version'], { env: cleanEnv() })).stdout, `${pkg.version}\n`)
    const dataDir = join(work.path, 'data')
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const child = spawn(join(bin, 'plant-catalogue'), [], {
      cwd: work.path, env: cleanEnv({ HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'warn', SHUTDOWN_GRACE_MS: '0' }), stdio: ['ignore', 'pipe', 'pipe']
    })
    let output = ''
    child.stdout.on('data', (b: Buffer) => { output += b.toString() })
    child.stderr.on('data', (b: Buffer) => { output += b.toString() })
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    try {
      for (let i = 0; ; i++) {
        const ready = await send(url, { method: 'GET', path: '/readyz' }).catch(() => undefined)
        if (ready?.status === 200) break
        assert.ok(i < 600 && child.exitCode === null, `the installed service did not become ready:\n${output}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const created = await send(url, { method: 'POST', path: '/v3/plant', body: { name: 'Installed monstera', tags: ['packaged'] } })
      assert.equal(created.status, 200, created.body)
      const version = (await send(url, { method: 'GET', path: '/v3/version' })).json()
      assert.deepEqual({ version: version.version, engine: version.engine }, { version: pkg.version, engine: 'sqlite' })
      for (const path of ['/v3/docs', '/v3/docs/static/swagger-ui-bundle.js']) {
        assert.equal((await send(url, { method: 'GET', path })).status, 200, `${path} is served from the install`)
      }

      const help = await run(join(bin, 'plants'), ['--help'], { env: cleanEnv() })
      assert.match(help.stdout, /Usage: plants COMMAND/)
      const exported = await run(join(bin, 'plants'), ['export', '--format', 'jsonl'], { cwd: work.path, env: cleanEnv({ DATA_DIR: dataDir }) })
      assert.deepEqual(JSON.parse(exported.stdout), created.json())
      writeFileSync(join(work.path, 'more.csv'), 'name,tags\nFern,packaged\n')
      const imported = await run(join(bin, 'plants'), ['import', 'more.csv', '--url', url], { cwd: work.path, env: cleanEnv() })
      assert.match(imported.stdout, /added +1/)
    } finally {
      child.kill('SIGTERM')
    }
    assert.equal(await exited, 0, output)
    assert.ok(existsSync(join(dataDir, 'catalogue.db')))
  })

  it('a consumer imports the typed client as plant-catalogue/client: it runs, and its types check (a wrong path or body fails to compile)', async () => {
    const consumer = join(install, 'consumer')
    mkdirSync(consumer)
    // A project of its own beside the install, resolving the package from the install's node_modules.
    symlinkSync(join(install, 'node_modules'), join(consumer, 'node_modules'))
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
    writeFileSync(join(consumer, 'run.js'), `import { createPlantClient } from 'plant-catalogue/client'
const client = createPlantClient({ baseUrl: 'http://127.0.0.1:1' })
console.log(typeof createPlantClient, typeof client.GET)
`)
    assert.equal((await run(process.execPath, ['run.js'], { cwd: consumer, env: cleanEnv() })).stdout, 'function function\n')
    const good = `import { createPlantClient, type Plant, type PlantPage } from 'plant-catalogue/client'
const client = createPlantClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'k' })
export async function names (): Promise<string[]> {
  const { data } = await client.GET('/v3/plant', { params: { query: { status: ['sold'], limit: 10 } } })
  const page: PlantPage | undefined = data
  return (page?.items ?? []).map((p: Plant) => p.name)
}
export async function add (): Promise<number | undefined> {
  const { data } = await client.POST('/v3/plant', { body: { name: 'Fern' } })
  return data?.id
}
`
    writeFileSync(join(consumer, 'good.ts'), good)
    writeFileSync(join(consumer, 'bad.ts'), `import { createPlantClient } from 'plant-catalogue/client'
const client = createPlantClient({ baseUrl: 'http://127.0.0.1:8080' })
export const wrongPath = client.GET('/v3/plants')
export const wrongBody = client.POST('/v3/plant', { body: { title: 'Fern' } })
`)
    // The checkout's compiler, as a consumer's would be: strict, resolving the package's exports map.
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const flags = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules/@types')]
    const checked = await run(process.execPath, [tsc, ...flags, 'good.ts'], { cwd: consumer, env: cleanEnv() }).then(() => undefined, (err: { stdout: string }) => err.stdout)
    assert.equal(checked, undefined, checked)
    const refused = await run(process.execPath, [tsc, ...flags, 'bad.ts'], { cwd: consumer, env: cleanEnv() }).then(() => '', (err: { stdout: string }) => err.stdout)
    assert.match(refused, /^bad\.ts\(3,\d+\): error TS/m, 'a path the API does not have')
    assert.match(refused, /^bad\.ts\(4,\d+\): error TS\d+: [^\n]*'title' does not exist/m, 'a member the body does not have')
    assert.doesNotMatch(refused, /Cannot find module|TS7016/)
  })

  it('npm start builds only when the build is missing or older than the sources', async () => {
    // In a copy of the checkout whose `npm run build` only stamps the build (npm test has built
    // for real; what is tested here is when npm start asks for a build).
    const checkout = copyOfCheckout(join(work.path, 'stale'))
    const manifest = join(checkout, 'package.json')
    const project = JSON.parse(readFileSync(manifest, 'utf8')) as { scripts: Record<string, string> }
    project.scripts.build = 'node -e "require(\'node:fs\').writeFileSync(\'dist/.build-stamp\', \'rebuilt\\n\')"'
    writeFileSync(manifest, JSON.stringify(project))
    const stamp = join(checkout, 'dist/.build-stamp')
    // A build newer than the sources (the copy's folders are as new as the copy): nothing to do.
    const later = new Date(Date.now() + 5_000)
    utimesSync(stamp, later, later)
    const fresh = await run(process.execPath, ['scripts/ensure-build.mjs'], { cwd: checkout, env: cleanEnv() })
    assert.equal(fresh.stderr, '')
    assert.notEqual(readFileSync(stamp, 'utf8'), 'rebuilt\n')
    // A build older than the sources is rebuilt, and stamped anew.
    utimesSync(stamp, new Date(0), new Date(0))
    const stale = await run(process.execPath, ['scripts/ensure-build.mjs'], { cwd: checkout, env: cleanEnv() })
    assert.match(stale.stderr, /building \(dist\/ is missing or older than the sources\)/)
    assert.equal(readFileSync(stamp, 'utf8'), 'rebuilt\n')
    // A missing build too.
    rmSync(join(checkout, 'dist'), { recursive: true })
    mkdirSync(join(checkout, 'dist'))
    const missing = await run(process.execPath, ['scripts/ensure-build.mjs'], { cwd: checkout, env: cleanEnv() })
    assert.match(missing.stderr, /building/)
    assert.equal(readFileSync(stamp, 'utf8'), 'rebuilt\n')
  })

  it('npm start in a checkout without the compiler says what to do instead of failing on tsc', async () => {
    const checkout = join(work.path, 'checkout')
    mkdirSync(join(checkout, 'src'), { recursive: true })
    cpSync(join(ROOT, 'scripts/ensure-build.mjs'), join(checkout, 'scripts/ensure-build.mjs'))
    const result = await run(process.execPath, ['scripts/ensure-build.mjs'], { cwd: checkout, env: cleanEnv() }).then(() => undefined, (err: { code: number, stderr: string }) => err)
    assert.equal(result?.code, 1)
    assert.match(result.stderr, /the TypeScript compiler is not\ninstalled[^]*install the packed tarball/)
  })
})
