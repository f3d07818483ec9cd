import cluster from 'node:cluster'
import { availableParallelism } from 'node:os'
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { protectedModeRefusal } from './http/auth.js'
import { ConfigError, loadConfig, type Config } from './config.js'

// The process: read config once, listen, and shut down without dropping a request.

const IDLE_MS = 300

async function serve (config: Config): Promise<void> {
  const app = await buildApp(config)
  const refusal = protectedModeRefusal(config, app.writeKeyCount)
  if (refusal) {
    process.stderr.write(`${refusal}\n`)
    await app.close()
    process.exit(1)
  }
  closeWithGrace({ delay: config.shutdownGraceMs + 15_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'fatal error, shutting down')
    else app.log.info({ signal }, 'shutting down')
    // Fail readiness at once, keep answering while the load balancer notices, then stop accepting.
    app.readiness.draining = true
    const until = Date.now() + config.shutdownGraceMs
    while (Date.now() < until && Date.now() - app.readiness.lastRequestAt < IDLE_MS) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await app.close() // waits for requests in flight, then closes the store
  })
  await app.listen({ host: config.host, port: config.port })
}

function main (): void {
  let config: Config
  try {
    config = loadConfig()
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`${err.message}\n`)
    process.exit(1)
  }
  const workers = config.workers === 'auto' ? availableParallelism() : config.workers
  if (workers > 1 && cluster.isPrimary) {
    // Workers share the listening socket; each opens the storage itself (SQLite's file locks keep them safe).
    for (let i = 0; i < workers; i++) cluster.fork()
    cluster.on('exit', (worker, code, signal) => {
      if (code !== 0 && signal === null && !shuttingDown) process.stderr.write(`worker ${worker.process.pid} exited with ${code}\n`)
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0)
    })
    let shuttingDown = false
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      process.on(sig, () => {
        shuttingDown = true
        for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(sig)
      })
    }
    return
  }
  serve(config).catch((err) => {
    process.stderr.write(`start-up failed: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}

main()
