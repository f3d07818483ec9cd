import { mkdtempSync } from 'node:fs'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig, type Config } from '../../src/config.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { freshSchema, postgresEngine } from './postgres-engine.js'

const DAY = 86_400_000

export interface Listening { app: FastifyInstance, base: string, sockets: Set<Socket> }

/** A listening service on `store`, for the tests that need a real socket (SSE); closed when the test ends. */
export async function listen (t: TestContext, store: PlantStore, config: Partial<Config> = {}): Promise<Listening> {
  const app = await buildApp(testConfig(config), { store })
  const sockets = new Set<Socket>()
  app.server.on('connection', (s: Socket) => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.after(async () => { for (const s of sockets) s.destroy(); await app.close() })
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, sockets }
}

/** Two stores on one database: two instances of the service as far as the feed can tell. */
export const PAIRS: Record<string, { skip: string | false, open (t: TestContext, postgres?: { operationTimeoutMs?: number }): Promise<PlantStore[]> }> = {
  sqlite: {
    skip: false,
    open: async (t) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'plants-feed-'))
      const stores = [0, 1].map(() => openSqliteStore({ dataDir, feedRetentionMs: DAY }))
      t.after(async () => { for (const s of stores) await s.close() })
      return stores
    }
  },
  postgres: {
    skip: postgresEngine.skip,
    open: async (t, postgres = {}) => {
      const scratch = await freshSchema()
      const stores = await Promise.all([0, 1].map(() => openPostgresStore({ connectionString: scratch.url, feedRetentionMs: DAY, ...postgres })))
      t.after(async () => { for (const s of stores) await s.close(); await scratch.drop() })
      return stores
    }
  }
}
