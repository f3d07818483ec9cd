import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { Gauge, type Registry } from 'prom-client'
import { component, ref } from '../http/components.js'
import { HEADERS, problemResponses } from '../http/problem.js'
import type { PlantStore } from '../store/plant-store.js'
import { PACKAGE_VERSION } from '../version.js'

const Version = component('Version', Type.Object({
  version: Type.String({ description: 'The release of the service (its package version, as `plant-catalogue --version` prints it)' }),
  apiVersion: Type.String({ description: "The version of the API this release serves: the OpenAPI document's info.version" }),
  engine: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')], { description: 'The storage engine in use' }),
  schemaVersion: Type.Integer({
    description: "The database's schema version, read live: SQLite's user_version, or the highest PostgreSQL migration applied " +
      '(a newer release starting beside this one may have raised it)'
  })
}, { description: 'What is running.' }))

/**
 * What is running: GET /v3/version, and the same as labels of a constant gauge in /metrics
 * (`plant_catalogue_info`), so a dashboard tells which release and schema each instance runs.
 */
export const versionRoutes: FastifyPluginAsyncTypebox<{ store: PlantStore, registry: Registry }> = async (app, { store, registry }) => {
  let apiVersion: string | undefined
  // The document is generated once by @fastify/swagger; its info.version is the API's version.
  const api = (): string => (apiVersion ??= app.swagger().info.version)
  const current = async (): Promise<{ version: string, apiVersion: string, engine: 'sqlite' | 'postgres', schemaVersion: number }> =>
    ({ version: PACKAGE_VERSION, apiVersion: api(), engine: store.engine, schemaVersion: await store.schemaVersion() })

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
