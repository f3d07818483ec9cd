import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import type { PlantStore } from '../../src/store/plant-store.js'
import { openStore } from '../../src/store/open/open-store.js'
import { freshSchema, TEST_DATABASE_URL } from './postgres-engine.js'

// The catalogues a `plants` command test runs against: a data folder, and PostgreSQL when
// TEST_DATABASE_URL is set. Each make() is a fresh, empty catalogue, removed when the test ends.

export interface CliTarget {
  /** The environment and the arguments that point `plants` at this catalogue. */
  env: NodeJS.ProcessEnv
  args: string[]
  /** Opens the catalogue in the test's own process (creating it on first open). */
  open: () => Promise<PlantStore>
}

export const CLI_TARGETS: Record<string, { skip: string | false, make (t: TestContext): Promise<CliTarget> }> = {
  'data folder': {
    skip: false,
    make: async (t) => {
      const dir = await mkdtemp(join(tmpdir(), 'plants-cli-'))
      t.after(() => rm(dir, { recursive: true, force: true }))
      const dataDir = join(dir, 'data')
      return { env: {}, args: ['--data-dir', dataDir], open: () => openStore({ dataDir, feedRetentionMs: 86_400_000 }) }
    }
  },
  postgres: {
    skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set',
    make: async (t) => {
      const scratch = await freshSchema()
      t.after(() => scratch.drop())
      return { env: { DATABASE_URL: scratch.url }, args: [], open: () => openStore({ databaseUrl: scratch.url, dataDir: '', feedRetentionMs: 86_400_000 }) }
    }
  }
}
