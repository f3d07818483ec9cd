import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { ConfigError, loadConfig, MIN_KEY_LENGTH, testConfig, workerCount } from '../../src/config.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { ROOT, serviceCommand, serviceEnv, tempDir } from '../helpers/process.js'

// What an operator meets when a setting is wrong: one line naming the variable and what it allows.

/**
 * Runs the real server with `env` (the service's own variables otherwise unset) and returns its exit and stderr.
 * `unprivileged`: as this same user but, when that is root, without the capabilities that let root
 * write anywhere, so file permissions apply as they do to the service's own user in production.
 * Not another user: one could not enter a clone under a private folder (`mktemp -d`, 0700), and the
 * test would be about where the clone lives.
 */
function start (env: Record<string, string>, options: { unprivileged?: boolean } = {}): { status: number | null, stderr: string } {
  const node = serviceCommand().flat()
  const [command, ...args] = options.unprivileged === true && process.getuid?.() === 0 ? [...WITHOUT_ROOT_POWERS, ...node] : node
  const run = spawnSync(command, args, { cwd: ROOT, env: serviceEnv({ LOG_LEVEL: 'silent', ...env }), encoding: 'utf8', timeout: 30_000 })
  return { status: run.status, stderr: run.stderr ?? String(run.error) }
}

// util-linux's setpriv drops the capabilities to override file permissions (from the bounding set:
// they are then lost at the exec of node).
const WITHOUT_ROOT_POWERS = ['setpriv', '--bounding-set=-dac_override,-dac_read_search,-fowner', '--']

const refusal = (name: string, allowed: RegExp) => (err: unknown): boolean => {
  assert.ok(err instanceof ConfigError, String(err))
  assert.match(err.message, new RegExp(`\\b${name}\\b`))
  assert.match(err.message, allowed)
  assert.doesNotMatch(err.message, /union value/)
  return true
}

describe('strict settings', () => {
  for (const value of ['1e4', '80.5', '0', '65536', '-1', ' 8080', '0x50', 'eighty']) {
    test(`PORT=${JSON.stringify(value)} is refused as not an integer from 1 to 65535`, () => {
      assert.throws(() => loadConfig({ PORT: value }), refusal('PORT', /an integer from 1 to 65535/))
    })
  }

  test('every variable set to the empty string is refused as empty, never taken as unset', () => {
    for (const name of ['HOST', 'PORT', 'DATA_DIR', 'DATABASE_URL', 'LOG_LEVEL', 'API_KEYS', 'API_KEYS_FILE', 'ALLOW_ANONYMOUS_WRITES',
      'RATE_LIMIT', 'TRUST_PROXY', 'CORS_ORIGINS', 'SHUTDOWN_GRACE_MS', 'FEED_RETENTION_DAYS', 'WORKERS']) {
      assert.throws(() => loadConfig({ [name]: '' }), refusal(name, /is set but empty; expected /), name)
    }
  })

  test('LOG_LEVEL=INFO and WORKERS=0 list the values allowed instead of "expected union value"', () => {
    assert.throws(() => loadConfig({ LOG_LEVEL: 'INFO' }), refusal('LOG_LEVEL', /one of fatal, error, warn, info, debug, trace, silent/))
    assert.throws(() => loadConfig({ WORKERS: '0' }), refusal('WORKERS', /auto or an integer from 1 to 256/))
    assert.throws(() => loadConfig({ WORKERS: '2.5' }), refusal('WORKERS', /auto or an integer/))
    assert.throws(() => loadConfig({ ALLOW_ANONYMOUS_WRITES: 'yes' }), refusal('ALLOW_ANONYMOUS_WRITES', /true or false/))
    assert.throws(() => loadConfig({ FEED_RETENTION_DAYS: '1e3' }), refusal('FEED_RETENTION_DAYS', /a number of days/))
  })

  test('good values still convert: numbers, fractions of a day, auto, booleans', () => {
    const c = loadConfig({ PORT: '65535', WORKERS: '4', FEED_RETENTION_DAYS: '0.5', ALLOW_ANONYMOUS_WRITES: 'false', RATE_LIMIT: '0' })
    assert.equal(c.port, 65535)
    assert.equal(c.workers, 4)
    assert.equal(c.feedRetentionMs, 43_200_000)
    assert.equal(c.allowAnonymousWrites, false)
    assert.equal(loadConfig({ WORKERS: 'auto' }).workers, 'auto')
  })

  test('the processes that serve: WORKERS as given, auto the host\'s cores', () => {
    assert.equal(workerCount(loadConfig({ WORKERS: '3' })), 3)
    assert.equal(workerCount(loadConfig({ WORKERS: 'auto' })), availableParallelism())
    assert.equal(workerCount(loadConfig({})), 1)
  })

  test('HISTORY_RETENTION_DAYS: 365 days unless set; a number of days above 0', () => {
    assert.equal(loadConfig({}).historyRetentionMs, 365 * 86_400_000)
    assert.equal(loadConfig({ HISTORY_RETENTION_DAYS: '0.5' }).historyRetentionMs, 43_200_000)
    for (const value of ['0', '-1', 'forever', '']) assert.throws(() => loadConfig({ HISTORY_RETENTION_DAYS: value }), refusal('HISTORY_RETENTION_DAYS', /a number of days|empty/), value)
  })

  test('the retention settings name their maximum: 36501 days is refused saying at most 36500', () => {
    for (const [name, example] of [['FEED_RETENTION_DAYS', '7'], ['TRASH_RETENTION_DAYS', '30'], ['HISTORY_RETENTION_DAYS', '365']]) {
      assert.throws(() => loadConfig({ [name]: '36501' }), (err: Error) => err.message === `Invalid configuration: ${name}="36501"; expected a number of days above 0 and at most 36500 (e.g. ${example} or 0.5)`, name)
      assert.equal(loadConfig({ [name]: '36500' })[name === 'FEED_RETENTION_DAYS' ? 'feedRetentionMs' : name === 'TRASH_RETENTION_DAYS' ? 'trashRetentionMs' : 'historyRetentionMs'], 36500 * 86_400_000)
    }
  })

  test('API_KEYS="," says it holds no keys, not "set API_KEYS"', () => {
    assert.throws(() => loadConfig({ API_KEYS: ',' }), refusal('API_KEYS', /holds no keys/))
    assert.throws(() => loadConfig({ API_KEYS: ' , ' }), refusal('API_KEYS', /holds no keys|empty/))
  })

  test('an API_KEYS_FILE with no digests, or one that cannot be read, is refused naming the file', async (t) => {
    const dir = tempDir('plants-keys')
    t.after(dir.remove)
    const empty = join(dir.path, 'keys')
    writeFileSync(empty, '# no keys yet\n\n')
    await assert.rejects(buildApp(testConfig({ apiKeysFile: empty, dataDir: ':memory:' })), (err: Error) =>
      err instanceof ConfigError && err.message.includes('API_KEYS_FILE') && err.message.includes(empty) && /holds no keys/.test(err.message))
    await assert.rejects(buildApp(testConfig({ apiKeysFile: join(dir.path, 'missing'), dataDir: ':memory:' })), (err: Error) =>
      err instanceof ConfigError && /API_KEYS_FILE .*missing cannot be read \(ENOENT\)/.test(err.message))
    // Through the real server: one line, said once (it used to read "start-up failed: Invalid configuration: …").
    const run = start({ API_KEYS_FILE: join(dir.path, 'missing'), DATA_DIR: join(dir.path, 'data') })
    assert.equal(run.status, 1, run.stderr)
    assert.match(run.stderr.trim(), /^Invalid configuration: API_KEYS_FILE .*missing cannot be read \(ENOENT\)$/)
  })

  test('TRUST_PROXY takes addresses and CIDRs only: "true" and "maybe" are refused naming the variable', () => {
    assert.deepEqual(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8,loopback' }).trustProxy, ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', 'loopback'])
    assert.equal(loadConfig({}).trustProxy, false)
    assert.throws(() => loadConfig({ TRUST_PROXY: 'true' }), refusal('TRUST_PROXY', /any client.*addresses or CIDRs/))
    for (const bad of ['maybe', '10.0.0.0/33', '10.0.0.1/8/1', '1', ',']) {
      assert.throws(() => loadConfig({ TRUST_PROXY: bad }), refusal('TRUST_PROXY', /addresses or CIDRs/), bad)
    }
  })

  test('API_KEYS: an empty item or a key under 16 characters is refused by its place, never echoed', () => {
    const long = 'k'.repeat(MIN_KEY_LENGTH)
    assert.deepEqual(loadConfig({ API_KEYS: ` ${long}1 , ${long}2 ` }).apiKeys, [`${long}1`, `${long}2`])
    assert.throws(() => loadConfig({ API_KEYS: `${long}a,,${long}b` }), refusal('API_KEYS', /item 2 of 3 is empty/))
    assert.throws(() => loadConfig({ API_KEYS: `${long}a,` }), refusal('API_KEYS', /item 2 of 2 is empty/))
    assert.throws(() => loadConfig({ API_KEYS: `${long},shortkey` }), (err: Error) => {
      assert.match(err.message, /API_KEYS item 2 of 2 is a key of 8 characters, too short.*at least 16 characters/)
      assert.doesNotMatch(err.message, /shortkey|kkkk/, 'the keys are not repeated')
      return true
    })
    const run = start({ API_KEYS: 'a,,b' })
    assert.equal(run.status, 1, run.stderr)
    assert.match(run.stderr.trim(), /^Invalid configuration: API_KEYS item 2 of 3 is empty/)
  })

  test('HOST=999.1.1.1 is refused as no IPv4 address (it was refused for having no keys); names and addresses pass', () => {
    for (const host of ['0.0.0.0', '::', '::1', 'localhost', 'plants.internal', 'my-host']) assert.equal(loadConfig({ HOST: host }).host, host)
    assert.throws(() => loadConfig({ HOST: '999.1.1.1' }), refusal('HOST', /is not an IPv4 address/))
    assert.throws(() => loadConfig({ HOST: '[::1]' }), refusal('HOST', /without brackets/))
    assert.throws(() => loadConfig({ HOST: 'my host' }), refusal('HOST', /neither an IP address nor a host name/))
    const run = start({ HOST: '999.1.1.1' })
    assert.equal(run.status, 1, run.stderr)
    assert.match(run.stderr.trim(), /^Invalid configuration: HOST="999\.1\.1\.1" is not an IPv4 address/)
  })

  test('DATABASE_URL=postgres:// is refused as naming no host (it said "PostgreSQL at localhost:5432"), and a URL is never echoed', () => {
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://' }), refusal('DATABASE_URL', /names no host; expected postgres:\/\/user:password@host/))
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://me:pw@/db' }), (err: Error) => /DATABASE_URL (names no host|is not a valid URL)/.test(err.message) && !err.message.includes('pw'))
    assert.throws(() => loadConfig({ DATABASE_URL: 'mysql://me:s3cret@db/x' }), (err: Error) => /DATABASE_URL/.test(err.message) && !err.message.includes('s3cret'))
    assert.equal(loadConfig({ DATABASE_URL: 'postgres:///plants?host=/run/postgresql' }).databaseUrl, 'postgres:///plants?host=/run/postgresql')
    const run = start({ DATABASE_URL: 'postgres://' })
    assert.equal(run.status, 1, run.stderr)
    assert.equal(run.stderr.trim(), 'Invalid configuration: DATABASE_URL names no host; expected postgres://user:password@host:port/database')
  })

  test('with WORKERS=2 a key file that cannot be read is said once, before any worker starts', (t) => {
    const dir = tempDir('plants-keys')
    t.after(dir.remove)
    const run = start({ WORKERS: '2', API_KEYS_FILE: join(dir.path, 'missing'), DATA_DIR: join(dir.path, 'data') })
    assert.equal(run.status, 1, run.stderr)
    assert.match(run.stderr.trim(), /^Invalid configuration: API_KEYS_FILE .*missing cannot be read \(ENOENT\)$/, 'one line, no worker started')
  })

  test('the server stops on PORT=1e4, PORT=80.5 and PORT= with one line naming the variable', () => {
    for (const value of ['1e4', '80.5', '']) {
      const run = start({ PORT: value })
      assert.equal(run.status, 1, run.stderr)
      const lines = run.stderr.trim().split('\n')
      assert.equal(lines.length, 1, run.stderr)
      assert.match(lines[0], /^Invalid configuration: PORT.*an integer from 1 to 65535/)
    }
  })
})

describe('a bad DATA_DIR', () => {
  const opening = (dataDir: string): void => { openSqliteStore({ dataDir, feedRetentionMs: 1 }).close().catch(() => {}) }

  test('a missing parent folder is named, and nothing is created', (t) => {
    const dir = tempDir('plants-datadir')
    t.after(dir.remove)
    const wanted = join(dir.path, 'typo', 'data')
    assert.throws(() => opening(wanted), /DATA_DIR .*typo\/data: its parent folder .*typo does not exist/)
    assert.throws(() => opening(wanted)) // still missing: no tree was grown
  })

  test('a file where the folder should be, or a catalogue.db that is not a database, is named with the reason', (t) => {
    const dir = tempDir('plants-datadir')
    t.after(dir.remove)
    const file = join(dir.path, 'file')
    writeFileSync(file, 'x')
    assert.throws(() => opening(file), /DATA_DIR .*\/file: is not a folder/)
    const folder = join(dir.path, 'data')
    mkdirSync(folder)
    writeFileSync(join(folder, 'catalogue.db'), 'these are my notes, not a database')
    assert.throws(() => opening(folder), /DATA_DIR .*\/data: catalogue\.db is not an SQLite database/)
  })

  test('a folder under /proc stops the start with the path and the reason (it used to hang in mkdir)', () => {
    for (const dataDir of ['/proc/plants-data', '/proc/self']) {
      const run = start({ DATA_DIR: dataDir })
      assert.equal(run.status, 1, run.stderr)
      assert.match(run.stderr.trim(), new RegExp(`^start-up failed: DATA_DIR ${dataDir}: the folder (cannot be created|is not writable) \\(E[A-Z]+\\)$`))
    }
  })

  test('a read-only folder stops the start with the path and the reason', (t) => {
    const dir = tempDir('plants-datadir')
    t.after(dir.remove)
    const folder = join(dir.path, 'data')
    mkdirSync(folder)
    chmodSync(folder, 0o555)
    if (process.getuid?.() === 0) {
      // The precondition, checked on its own so that a failure says what to change.
      const probe = spawnSync(WITHOUT_ROOT_POWERS[0], [...WITHOUT_ROOT_POWERS.slice(1), 'true'], { encoding: 'utf8' })
      assert.equal(probe.status, 0, `run as root, this test needs util-linux's setpriv and the capability to drop capabilities (CAP_SETPCAP): ${probe.stderr ?? String(probe.error)}. Install util-linux, or run the tests as an ordinary user.`)
    }
    const run = start({ DATA_DIR: folder }, { unprivileged: true })
    assert.equal(run.status, 1, run.stderr)
    assert.match(run.stderr.trim(), new RegExp(`^start-up failed: DATA_DIR ${folder}: the folder is not writable \\(EACCES\\)$`))
  })
})
