import type { TestContext } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp, type AppOptions } from '../../src/app.js'
import { testConfig, type Config } from '../../src/config.js'
import type { Engine, StoreOptions } from './engines.js'
import { OpenApiCheck } from './openapi-check.js'

export interface TestApp {
  app: FastifyInstance
  /** inject, with every response checked against the served OpenAPI document. */
  request (options: InjectOptions): Promise<LightMyRequestResponse>
  /** Adds a plant and returns its record. */
  add (plant?: Record<string, unknown>): Promise<Record<string, any>>
}

/** A service on a fresh, empty store of `engine`, closed when the test ends. */
export async function build (t: TestContext, engine: Engine, config: Partial<Config> = {}, storeOptions: StoreOptions = {}, appOptions: Omit<AppOptions, 'store'> = {}): Promise<TestApp> {
  const store = await engine.open(storeOptions)
  // Pictures are processed beside other test processes: given longer than the service's 20 s (photos-worker tests that limit).
  const app = await buildApp(testConfig(config), { pictureDeadlineMs: 120_000, ...appOptions, store })
  t.after(async () => {
    await app.close()
    await store.close()
  })
  await app.ready()
  const openapi = OpenApiCheck.of(app.openapiDocument())
  const request = async (options: InjectOptions): Promise<LightMyRequestResponse> => {
    const res = await app.inject(options)
    openapi.check(options.method ?? 'GET', String(options.url), res.statusCode, res.headers, res.body)
    return res
  }
  const add = async (plant: Record<string, unknown> = { name: 'Monstera' }): Promise<Record<string, any>> => {
    const res = await request({ method: 'POST', url: '/v3/plant', payload: plant })
    if (res.statusCode !== 200) throw new Error(`add failed: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  return { app, request, add }
}
