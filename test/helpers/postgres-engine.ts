import type { Engine } from './engines.js'

// Filled in with the PostgreSQL store: a fresh database (or schema) per store, dropped on close.
export const postgresEngine: Engine = {
  name: 'postgres',
  skip: 'the PostgreSQL store is not written yet',
  open: async () => { throw new Error('PostgreSQL store not written yet') }
}
