import { Type, type Static, type TSchema } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'

// Named schemas: each appears once in the OpenAPI document's `components.schemas` and is referenced
// from the operations with `$ref`, so generated clients get one type a name (Plant, Problem, …).
//
// The pattern, for every schema a client should know by name:
//   export const PlantPatch = component('PlantPatch', Type.Object({ … }))   // in the resource's schemas.ts
//   body: ref(PlantPatch)   /   200: { ...ref(Plant), description, headers }   // in its routes
// `component` records the schema here; buildApp registers them all (app.addSchema) before any route,
// so Fastify's validation and serialisation resolve the same `$ref`s the document shows.
// Query strings, path parameters and headers stay inline: OpenAPI lists them as parameters.

const registry = new Map<string, TSchema>()

/** Names `schema` as a component (`$id`); the name must be new. */
export function component<T extends TSchema> (name: string, schema: T): T & { $id: string } {
  if (registry.has(name)) throw new Error(`component ${name} is declared twice`)
  const named = { ...schema, $id: name }
  registry.set(name, named)
  return named
}

/** A `$ref` to a component, typed as the component itself. */
export const ref = <T extends TSchema & { $id: string }>(schema: T) => Type.Unsafe<Static<T>>(Type.Ref(schema.$id))

/** Every component declared so far, in declaration order. */
export const components = (): TSchema[] => [...registry.values()]

/** Makes every component known to Fastify (validation, serialisation, @fastify/swagger). */
export function registerComponents (app: FastifyInstance): void {
  for (const schema of registry.values()) app.addSchema(schema)
}
