import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig, type Config } from '../../src/config.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'

export interface ListeningService {
  app: FastifyInstance
  store: PlantStore
  /** The origin, e.g. http://127.0.0.1:40123 */
  url: string
  close (): Promise<void>
}

/**
 * The real service listening on a loopback port chosen by the system, on the embedded store in
 * `dataDir` (':memory:' for a private one), so tools and browsers talk to it over TCP.
 */
export async function listenOn (dataDir: string, config: Partial<Config> = {}): Promise<ListeningService> {
  const store = openSqliteStore({ dataDir, feedRetentionMs: 7 * 86_400_000 })
  const app = await buildApp(testConfig({ dataDir, ...config }), { store })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  return {
    app,
    store,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await app.close()
      await store.close()
    }
  }
}
