import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { cp, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { plants } from '../../scripts/lib/cli-harness.js'
import { built } from '../helpers/process.js'

const run = promisify(execFile)
const root = new URL('../../', import.meta.url)

test('every command answers --help with its usage and exit status 0', async () => {
  const overview = await plants(['--help'])
  assert.equal(overview.code, 0)
  const commands = [...overview.stdout.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1])
  assert.ok(commands.length >= 3, overview.stdout)
  for (const name of commands) {
    for (const flag of ['--help', '-h']) {
      const result = await plants([name, flag])
      assert.equal(result.code, 0, `${name} ${flag}`)
      assert.match(result.stdout, new RegExp(`^Usage: plants ${name}`), `${name} ${flag}`)
    }
    assert.equal((await plants(['help', name])).stdout, (await plants([name, '--help'])).stdout)
  }
})

test('the help says what import and the key scopes do now: import updates as well as adds; write includes the trash, admin its purge, keys and webhooks', async () => {
  const overview = (await plants(['--help'])).stdout
  assert.match(overview, /^ {2}import +add and update plants from a CSV or JSON Lines file: a row with an id or a known sku updates that plant, any other adds one$/m)
  assert.doesNotMatch(overview, /skipping those already in the catalogue/)
  const keys = (await plants(['keys', '--help'])).stdout
  assert.match(keys, /^ {2}write +every change to plants and photos, deleting to the trash, listing it and restoring\n +from it: an integration$/m)
  assert.match(keys, /^ {2}admin +all of write, and purging the trash, keys and webhooks: staff, operators$/m)
})

test('usage mistakes exit with 2 and point to --help', async () => {
  for (const args of [[], ['frobnicate'], ['import'], ['import', 'a.csv', '--bogus'], ['export', '--format', 'xml'], ['import', 'a.csv', '--batch-size', '0'],
    ['export', '--url', 'http://127.0.0.1:1', '--data-dir', 'x']]) {
    const result = await plants(args)
    assert.equal(result.code, 2, args.join(' '))
  }
  assert.equal((await plants(['import', 'a.csv', '--bogus'])).stderr, 'plants import: unknown option --bogus\nRun plants import --help for usage.\n')
})

test('an unknown option is named in the tool\'s own words, with the option likely meant, by every command', async () => {
  const commands = [...(await plants(['--help'])).stdout.matchAll(/^ {2}([a-z-]+) {2,}/gm)].map((m) => m[1])
  assert.ok(commands.includes('webhooks'), commands.join(' '))
  for (const name of commands) {
    const result = await plants([name, '--hepl'])
    assert.deepEqual([result.code, result.stderr], [2, `plants ${name}: unknown option --hepl: did you mean --help?\nRun plants ${name} --help for usage.\n`])
  }
  // The same letters but for dashes, or one typed as a single-dash word: the option meant.
  for (const typed of ['--dryrun', '-dry-run', '--Dry_Run=yes']) {
    assert.match((await plants(['import', 'a.csv', typed])).stderr, /^plants import: unknown option -[-\w]+: did you mean --dry-run\?\n/, typed)
  }
  assert.match((await plants(['export', '--fromat', 'csv'])).stderr, /unknown option --fromat: did you mean --format\?/)
})

test('--url on a command that works on the catalogue\'s own files or database is refused saying so, not with the option parser\'s words', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['keys', 'list'], /^plants keys: keys work on the catalogue's own database \(--data-dir, or DATABASE_URL\), not on a running service \(--url\): over HTTP, use \/v3\/keys with an admin key\n/],
    [['keys', 'revoke', 'till-3'], /not on a running service \(--url\): over HTTP, use \/v3\/keys/],
    [['restore', 'backup.db'], /^plants restore: restore replaces the catalogue file in the data folder \(--data-dir\), with the service stopped, not through a running service \(--url\)/],
    [['restore-marks', 'save', 'marks.json'], /^plants restore-marks: restore-marks reads and writes the catalogue's own database .*not a running service \(--url\)/],
    [['migrate'], /^plants migrate: migrate copies a data folder \(--data-dir\) into PostgreSQL \(--to postgres:\/\/…\), not from a running service \(--url\)/]
  ]
  for (const [args, message] of cases) {
    const result = await plants([...args, '--url', 'http://127.0.0.1:8080'])
    assert.equal(result.code, 2, args.join(' '))
    assert.match(result.stderr, message, args.join(' '))
    assert.doesNotMatch(result.stderr, /Unknown option/, args.join(' '))
  }
})

test('the package installs plants as a bin: bin/plants.js, which runs dist/src/cli/plants.js, built from a source with a node shebang', async () => {
  const pkg = JSON.parse(await readFile(new URL('package.json', root), 'utf8'))
  assert.equal(pkg.bin.plants, 'bin/plants.js')
  assert.ok(pkg.files.includes('bin/'), 'the launcher travels in the package')
  assert.match(await readFile(new URL('src/cli/plants.ts', root), 'utf8'), /^#!\/usr\/bin\/env node\n/)
  // Both executables as separate processes started through their shebangs.
  for (const bin of [pkg.bin.plants, 'dist/src/cli/plants.js']) {
    const { stdout } = await run(built(bin), ['backup', '--help'], { env: quiet() })
    assert.match(stdout, /^Usage: plants backup FILE/, bin)
  }
})

/** The environment of a command run as a person would: without the test runner's loader. */
function quiet (): NodeJS.ProcessEnv {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  delete env.NODE_TEST_CONTEXT
  return env
}

test('npx plants runs in a checkout (npm exec finds the package\'s own bin), building first when the build is older than the sources, its output kept off standard output', async (t) => {
  built('dist/.build-stamp')
  const here = await run('npx', ['--offline', 'plants', 'help', 'export'], { cwd: fileURLToPath(root), env: quiet() })
  assert.match(here.stdout, /^Usage: plants export/)
  assert.equal(here.stderr, '')

  // A copy of the checkout whose `npm run build` only stamps the build (the real one is what npm test
  // built), with sources newer than its stamp: as a checkout is after a pull.
  const copy = await mkdtemp(join(tmpdir(), 'plants-npx-'))
  t.after(() => rm(copy, { recursive: true, force: true }))
  for (const entry of ['bin', 'scripts', 'dist', 'src', 'tsconfig.json', 'tsconfig.build.json', 'package.json']) {
    await cp(fileURLToPath(new URL(entry, root)), join(copy, entry), { recursive: true })
  }
  await symlink(fileURLToPath(new URL('node_modules', root)), join(copy, 'node_modules'))
  const manifest = JSON.parse(await readFile(join(copy, 'package.json'), 'utf8'))
  manifest.scripts.build = 'node -e "console.log(\'the build says this\'); require(\'node:fs\').writeFileSync(\'dist/.build-stamp\', \'rebuilt\\n\')"'
  await writeFile(join(copy, 'package.json'), JSON.stringify(manifest))
  await utimes(join(copy, 'dist/.build-stamp'), new Date(0), new Date(0))
  const stale = await run('npx', ['--offline', 'plants', 'help', 'backup'], { cwd: copy, env: quiet() })
  assert.match(stale.stdout, /^Usage: plants backup FILE/)
  assert.match(stale.stderr, /building \(dist\/ is missing or older than the sources\)\nthe build says this\n/)
  assert.equal(await readFile(join(copy, 'dist/.build-stamp'), 'utf8'), 'rebuilt\n')
})

test('an unknown command names the one likely meant', async () => {
  const result = await plants(['imprt', 'x.csv'])
  assert.equal(result.code, 2)
  assert.match(result.stderr, /^plants: unknown command "imprt": did you mean import\?\n/)
  assert.match((await plants(['frobnicate'])).stderr, /^plants: unknown command "frobnicate"\n/)
})
