import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { Gauge, type Registry } from 'prom-client'
import { component, ref } from '../http/schemas/components.js'
import { HEADERS, problemResponses } from '../http/problems/problem.js'
import type { PlantStore } from '../store/plant-store.js'
import { PACKAGE_VERSION } from '../version.js'

const Version = component('Version', Type.Object({
  version: Type.String({ description: 'The release of the service (its package version, as `plant-catalogue --version` prints it)' }),
  apiVersion: Type.String({ description: "The version of the API this release serves: the OpenAPI document's info.version" }),
  engine: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')], { description: 'The storage engine in use' }),
  schemaVersion: Type.Union([Type.Integer(), Type.Null()], {
    description: "The database's schema version: SQLite's user_version, or the highest PostgreSQL migration applied. Each request " +
      'reads it again for the next one (a newer release starting beside this one may have raised it) but is answered with the ' +
      'last value read, so this answers at once even while the database is unreachable; null when it has not been reachable ' +
      'since the service started'
  })
}, { description: 'What is running.' }))

/**
 * A value read from storage, answered from memory: each call starts a fresh read (one at a time) and
 * returns the last value read at once, or null when no read has succeeded yet (the service started
 * while its database was unreachable). So a version probe never waits on an unreachable database
 * (PostgreSQL's connect timeout), while what it says of the database stays at most one call old.
 * `prime` makes the first read, which start-up waits for.
 */
function lastKnown (read: () => Promise<number>): { get: () => number | null, prime: () => Promise<void> } {
  let known: number | null = null
  let reading: Promise<void> | undefined
  const refresh = (): Promise<void> => {
    // A failed read keeps the last value; the storage's own health (/readyz, the logs) says why.
    reading ??= read().then((value) => { known = value }, () => {}).finally(() => { reading = undefined })
    return reading
  }
  return {
    get: () => {
      void refresh()
      return known
    },
    prime: refresh
  }
}

/**
 * What is running: GET /v3/version, and the same as labels of a constant gauge in /metrics
 * (`plant_catalogue_info`), so a dashboard tells which release and schema each instance runs.
 */
export const versionRoutes: FastifyPluginAsyncTypebox<{ store: PlantStore, registry: Registry }> = async (app, { store, registry }) => {
  let apiVersion: string | undefined
  // The document is generated once by @fastify/swagger; its info.version is the API's version.
  const api = (): string => (apiVersion ??= app.openapiDocument().info.version)
  const schema = lastKnown(() => store.schemaVersion())
  app.addHook('onReady', schema.prime)
  const current = async (): Promise<{ version: string, apiVersion: string, engine: 'sqlite' | 'postgres', schemaVersion: number | null }> =>
    ({ version: PACKAGE_VERSION, apiVersion: api(), engine: store.engine, schemaVersion: schema.get() })

  app.get('/v3/version', {
    schema: {
      tags: ['operations'],
      operationId: 'version',
      summary: 'The running release, the API version and the schema version of the database',
      response: {
        200: { ...ref(Version), description: 'The running release, API and schema versions', headers: HEADERS.requestId },
        ...problemResponses(429, 503)
      }
    }
  }, current)

  registry.registerMetric(new Gauge({
    name: 'plant_catalogue_info',
    help: 'Always 1; the labels say which release, API version, engine and database schema version this instance runs',
    labelNames: ['version', 'api_version', 'engine', 'schema_version'] as const,
    registers: [],
    // With WORKERS > 1 the scrape combines every worker's series: the default (a sum) would say 2.
    aggregator: 'max',
    async collect () {
      this.reset()
      // Scraped while storage is down, the schema version is unknown rather than the scrape failing.
      const schema = await store.schemaVersion().then(String, () => 'unknown')
      this.set({ version: PACKAGE_VERSION, api_version: api(), engine: store.engine, schema_version: schema }, 1)
    }
  }))
}
