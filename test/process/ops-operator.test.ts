import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'
import { freePort, ROOT, serviceCommand, serviceEnv } from '../helpers/process.js'

// What an operator meets when installing and running the service by hand.

describe('operator findings', () => {
  test('a scrape of /metrics without a key is told that this resource needs one, not that "writes" do', async (t) => {
    const { app } = await build(t, sqliteEngine, { apiKeys: ['scrape-key'] })
    const res = await app.inject({ method: 'GET', url: '/metrics' })
    assert.equal(res.statusCode, 401)
    assert.equal(res.json().detail, 'This resource needs an API key: send Authorization: Bearer <key> or api_key: <key>')
    const write = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' } })
    assert.equal(write.json().detail, 'Writes need an API key: send Authorization: Bearer <key> or api_key: <key>')
  })
})

describe('plants, operator mistakes', () => {
  test('--api-key-file that does not exist is one line naming it, exit 1, no stack trace', async (t) => {
    const { plants } = await import('../../scripts/lib/cli-harness.js')
    const dir = await mkdtemp(join(tmpdir(), 'plants-ops-'))
    t.after(() => rm(dir, { recursive: true, force: true }))
    await writeFile(join(dir, 'stock.csv'), 'name\nFern\n')
    const result = await plants(['import', join(dir, 'stock.csv'), '--url', 'http://127.0.0.1:9', '--api-key-file', '/nonexistent/plants-key'])
    assert.equal(result.code, 1, result.stderr)
    assert.equal(result.stderr, 'plants import: --api-key-file /nonexistent/plants-key cannot be read (ENOENT)\n')
  })

  test('a --url on a port fetch refuses to use says why ("bad port"): the client never connects there, so the service needs another port', async () => {
    const { plants } = await import('../../scripts/lib/cli-harness.js')
    for (const port of [1, 6000]) {
      const result = await plants(['export', '--url', `http://127.0.0.1:${port}`])
      assert.equal(result.code, 1)
      assert.equal(result.stderr, `plants export: reading service http://127.0.0.1:${port}: fetch failed: bad port (fetch, as browsers do, never connects to this port: run the service on another one)\n`)
    }
  })

  test('an export to standard output from a service that cannot be read writes nothing, not a lone CSV header', async () => {
    const { plants } = await import('../../scripts/lib/cli-harness.js')
    const result = await plants(['export', '--url', 'http://127.0.0.1:6000'])
    assert.equal(result.code, 1)
    assert.equal(result.stdout, '')
  })
})

describe('plants --help, operator reading', () => {
  test('export offers --api-key-file for a service whose reads need a key, and --data-dir says DATABASE_URL comes first', async () => {
    const { plants } = await import('../../scripts/lib/cli-harness.js')
    const exportHelp = (await plants(['export', '--help'])).stdout
    assert.match(exportHelp, /--api-key-file FILE {2}with --url: a file holding an API key, for a service whose reads need one \(READS=keys\)/)
    assert.match(exportHelp, /\$DATABASE_URL when set/)
    assert.match((await plants(['import', '--help'])).stdout, /--api-key-file FILE/)
  })
})

describe('protected mode, at start-up', () => {
  test('a start refused for listening on 0.0.0.0 without keys creates no catalogue in DATA_DIR', async (t) => {
    const { spawnSync } = await import('node:child_process')
    const { existsSync } = await import('node:fs')
    const dir = await mkdtemp(join(tmpdir(), 'plants-ops-'))
    t.after(() => rm(dir, { recursive: true, force: true }))
    const dataDir = join(dir, 'data')
    const run = spawnSync(...serviceCommand(), {
      cwd: ROOT, env: serviceEnv({ HOST: '0.0.0.0', PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'silent' }), encoding: 'utf8', timeout: 30_000
    })
    assert.equal(run.status, 1)
    assert.match(run.stderr.trim(), /^Refusing to listen on 0\.0\.0\.0/)
    assert.equal(existsSync(dataDir), false, 'nothing was created')
  })
})

describe('the debug access line', () => {
  test('a success at debug names the client and whole milliseconds, like the info lines', async (t) => {
    const { buildApp } = await import('../../src/app.js')
    const { testConfig } = await import('../../src/config.js')
    const { logCollector } = await import('../helpers/log-lines.js')
    const store = await sqliteEngine.open()
    const log = logCollector()
    const app = await buildApp(testConfig({ logLevel: 'debug' }), { store, logStream: log.stream })
    t.after(async () => { await app.close(); await store.close() })
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant' })).statusCode, 200)
    const line = log.lines().find((l) => l.msg === 'request completed')
    assert.ok(line, 'a debug line per success')
    assert.equal(line.client, '127.0.0.1')
    assert.ok(Number.isInteger(line.ms), `ms is ${line.ms}`)
  })
})

describe('CORS_ORIGINS', () => {
  test('values no browser sends as an Origin (*, a bare host, a trailing slash) are refused, naming the entry', async () => {
    const { ConfigError, loadConfig } = await import('../../src/config.js')
    for (const value of ['*', 'shop.example', 'https://shop.example/', 'ftp://shop.example', 'https://a.example,shop.example']) {
      assert.throws(() => loadConfig({ CORS_ORIGINS: value }), (err: Error) => err instanceof ConfigError && /CORS_ORIGINS=.*is not an origin a browser sends/.test(err.message), value)
    }
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://shop.example, http://127.0.0.1:3000' }).corsOrigins, ['https://shop.example', 'http://127.0.0.1:3000'])
  })
})

describe('a port already in use', () => {
  test('the start fails in one line and closes the store first: no -wal or -shm left beside catalogue.db', async (t) => {
    const { spawnSync } = await import('node:child_process')
    const { existsSync } = await import('node:fs')
    const net = await import('node:net')
    const holder = net.createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    t.after(() => holder.close())
    const port = (holder.address() as import('node:net').AddressInfo).port
    const dir = await mkdtemp(join(tmpdir(), 'plants-ops-'))
    t.after(() => rm(dir, { recursive: true, force: true }))
    const run = spawnSync(...serviceCommand(), {
      cwd: ROOT, env: serviceEnv({ PORT: String(port), DATA_DIR: dir, LOG_LEVEL: 'silent' }), encoding: 'utf8', timeout: 30_000
    })
    assert.equal(run.status, 1)
    assert.match(run.stderr, /^start-up failed: listen EADDRINUSE/)
    assert.equal(existsSync(join(dir, 'catalogue.db-wal')), false, 'the store was closed')
  })
})
