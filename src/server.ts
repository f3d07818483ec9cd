#!/usr/bin/env node
import cluster from 'node:cluster'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { loadEnvKeys, protectedModeRefusal } from './http/auth/auth.js'
import { ConfigError, loadConfig, workerCount, type Config } from './config.js'
import { serveClusterMetrics } from './ops/cluster-metrics.js'
import { unavailableReason } from './ops/health.js'
import { databaseLocation, startupFacts } from './ops/startup.js'
import { StorageUnavailable } from './catalogue/errors.js'
import { PACKAGE_VERSION } from './version.js'

// The process (the package's `plant-catalogue` command): read config once, listen, and shut down
// without dropping a request.

const IDLE_MS = 300
/** However idle, readiness answers 503 this long (capped by the grace), so a load balancer's next probe sees it. */
const MIN_DRAIN_MS = 1_000

async function serve (config: Config): Promise<void> {
  // Refuse before the store opens: a refused start must not create a catalogue or migrate a database.
  // (A key file holds at least one key, or buildApp refuses it.) Keys stored in the catalogue count
  // too, so only a catalogue that cannot hold any yet (no database file) is refused here; PostgreSQL
  // and an existing file are asked after opening, below.
  const early = protectedModeRefusal(config, config.apiKeys.length + (config.apiKeysFile === undefined ? 0 : 1))
  if (early && config.databaseUrl === undefined && !existsSync(join(config.dataDir, 'catalogue.db'))) {
    process.stderr.write(`${early}\n`)
    process.exit(1)
  }
  const app = await buildApp(config)
  const refusal = protectedModeRefusal(config, app.writeKeyCount)
  if (refusal) {
    process.stderr.write(`${refusal}\n`)
    await app.close()
    process.exit(1)
  }
  // A cluster worker drains when its primary says so (see runPrimary), not on signals of its own.
  const grace = closeWithGrace({ delay: config.shutdownGraceMs + 15_000, skip: cluster.isWorker ? ['SIGINT', 'SIGTERM'] : [] }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'fatal error, shutting down')
    else app.log.info({ signal }, 'shutting down')
    // Fail readiness at once, keep answering while the load balancer notices, then stop accepting.
    app.readiness.draining = true
    const started = Date.now()
    const until = started + config.shutdownGraceMs
    const minimum = started + Math.min(MIN_DRAIN_MS, config.shutdownGraceMs)
    while (Date.now() < until && (Date.now() < minimum || Date.now() - app.readiness.lastRequestAt < IDLE_MS)) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const drained = Date.now()
    await app.close() // waits for requests in flight, then closes the store
    app.log.info({ drainMs: drained - started, closeMs: Date.now() - drained }, 'stopped')
  })
  if (cluster.isWorker) {
    let draining = false
    const drain = (): void => { if (!draining) { draining = true; grace.close() } }
    process.on('message', (m) => { if (m === 'shutdown') drain() })
    process.on('disconnect', drain) // the primary is gone
    // Ctrl-C reaches every process of the group, and the primary relays it: count it once.
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, drain)
  }
  // Storage that cannot be reached yet is no reason to refuse to start (it may come up later), but
  // the operator hears why now, not from the first failed request.
  await app.store.ping().catch((err: unknown) => {
    if (!(err instanceof StorageUnavailable)) throw err
    app.log.warn({ reason: unavailableReason(err) }, 'storage is not reachable yet: answering 503 and retrying')
  })
  // A port in use or an address not here: close the store before saying so (SQLite checkpoints its WAL).
  await app.listen({ host: config.host, port: config.port }).catch(async (err: unknown) => {
    await app.close().catch(() => {})
    throw err
  })
  app.log.info(startupFacts(config, app.writeKeyCount, app.storedKeys), 'plant catalogue started')
  // Ready without them (see lazy-schemas.ts); compiled now, before most first requests arrive.
  app.lazySchemas.compileRest().catch((err: unknown) => { app.log.error({ err }, 'a route schema does not compile') })
}

const USAGE = `Usage: plant-catalogue [--version | --help]

Serves the plant catalogue over HTTP. It is configured by environment variables only (HOST, PORT,
DATA_DIR, DATABASE_URL, API_KEYS_FILE, LOG_LEVEL, ...): see docs/configuration.md.
Stop it with SIGTERM: it drains, then exits.`

function main (): void {
  // Configuration is the environment's; arguments only ask about the program itself.
  const [arg, ...more] = process.argv.slice(2)
  if (arg === '--version' && more.length === 0) {
    process.stdout.write(`${PACKAGE_VERSION}\n`)
    return
  }
  if ((arg === '--help' || arg === '-h') && more.length === 0) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (arg !== undefined) {
    process.stderr.write(`plant-catalogue: unexpected argument ${JSON.stringify(arg)}\n\n${USAGE}\n`)
    process.exit(2)
  }
  let config: Config
  try {
    config = loadConfig()
    // The key file is checked once, before any worker starts: each would print the same refusal.
    if (cluster.isPrimary) loadEnvKeys(config)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`${err.message}\n`)
    process.exit(1)
  }
  const workers = workerCount(config)
  if (workers > 1 && cluster.isPrimary) {
    runPrimary(workers)
    return
  }
  serve(config).catch((err) => {
    const code = (err as { code?: unknown }).code
    const message = (err instanceof Error ? err.message : String(err)) + (typeof code === 'string' && !String(err).includes(code) ? ` (${code})` : '')
    // A storage refusal names the database it came from (never the password).
    const where = config.databaseUrl && !(err instanceof ConfigError) ? ` (PostgreSQL at ${databaseLocation(config.databaseUrl)})` : ''
    // A ConfigError's message already says what is wrong and where ("Invalid configuration: …").
    process.stderr.write(err instanceof ConfigError ? `${message}\n` : `start-up failed${where}: ${message}\n`)
    process.exit(1)
  })
}

/**
 * Workers share the listening socket; each opens the storage itself (SQLite's file locks and
 * PostgreSQL's transactions keep them safe). A worker that fails before it listens fails them all
 * (its siblings would fail alike: configuration, storage); one that dies later is replaced.
 */
function runPrimary (workers: number): void {
  const listening = new Set<number>()
  let shuttingDown = false
  let exitCode = 0
  const shutdown = (): void => {
    shuttingDown = true
    for (const w of Object.values(cluster.workers ?? {})) {
      // One still starting has nothing to drain and is not listening for the message yet.
      if (w && listening.has(w.id) && w.isConnected()) w.send('shutdown')
      else w?.process.kill('SIGTERM')
    }
  }
  cluster.on('listening', (worker) => { listening.add(worker.id) })
  cluster.on('exit', (worker, code, signal) => {
    const started = listening.delete(worker.id)
    if (!shuttingDown) {
      process.stderr.write(`worker ${worker.process.pid} exited with ${signal ?? code}${started ? '; starting another' : ' during start-up'}\n`)
      if (started) cluster.fork()
      else { exitCode = 1; shutdown() }
    }
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode)
  })
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, shutdown)
  serveClusterMetrics()
  for (let i = 0; i < workers; i++) cluster.fork()
}

main()
