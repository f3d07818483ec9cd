import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler'

// Fastify compiles every route's validators and response serialisers when the app becomes ready:
// a function for every route, HEAD twin and status, much of the CPU of a cold start, for a first
// request that needs two of them. Here each is compiled when first used
// instead, and `compileRest` compiles the others once the service is listening (server.ts), so
// neither readiness nor, a moment later, a first request waits for them, and a schema that does
// not compile is still found at start (test/process/start-up.test.ts compiles them all).

type Compiled = (...args: any[]) => any

/**
 * Serialisers by response shape, for every app of the process (the components and options are the
 * same for all): a second app compiles only the shapes no app before it did.
 */
const serializersByShape = new Map<string, Compiled>()

/** How many serialisers this process has compiled. */
export const serializersCompiled = (): number => serializersByShape.size

export class LazySchemas {
  readonly #pending = new Set<() => Compiled>()

  /**
   * A function that compiles on its first call (or when Fastify or Ajv reads `errors`, `schema`
   * or `schemaEnv` from it, which Fastify does before calling a validator) and then is the compiled one.
   */
  lazy<F extends Compiled> (compile: () => F): F {
    let compiled: F | undefined
    const get = (): F => {
      if (compiled === undefined) {
        compiled = compile()
        this.#pending.delete(get)
      }
      return compiled
    }
    this.#pending.add(get)
    const call = function (this: unknown, ...args: unknown[]): unknown { return get().apply(this, args) }
    for (const name of ['errors', 'schema', 'schemaEnv']) {
      Object.defineProperty(call, name, { get: () => (get() as unknown as Record<string, unknown>)[name], enumerable: true })
    }
    return call as F
  }

  /**
   * Fastify's own serialiser factory (fast-json-stringify), each serialiser compiled when first used,
   * and each compiled once for every response of the same shape. Every route answers its errors with
   * the Problem schema (so most responses are alike), and each fast-json-stringify
   * build validates and indexes every external schema it is given: so one serialiser serves every
   * response of a shape (`description` and `headers` are the document's, not the serialiser's), and a
   * build is given only the components its schema reaches through `$ref`, which makes the background
   * compiling after listen a fraction of what it was.
   */
  serializers (): SerializerFactory {
    const eager = SerializerSelector()
    return (externalSchemas, options) => {
      const external = externalSchemas as Record<string, unknown>
      const byShape = new Map<string, Compiled>()
      return (route) => {
        const { description: _description, headers: _headers, ...shape } = route.schema as Record<string, unknown>
        const key = JSON.stringify(shape)
        let serializer = byShape.get(key)
        if (serializer === undefined) {
          serializer = serializersByShape.get(key) ?? this.lazy(() => {
            const compiled = eager(reachedFrom(route.schema, external), options)(route)
            serializersByShape.set(key, compiled)
            return compiled
          })
          byShape.set(key, serializer)
        }
        return serializer
      }
    }
  }

  /** How many are still to compile. */
  get pending (): number { return this.#pending.size }

  /** Compiles the rest, a few at a time between other work; rejects with the first schema that does not compile. */
  async compileRest (): Promise<void> {
    for (const get of [...this.#pending]) {
      get()
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
}

/** The components `schema` reaches through `$ref`s (`"Plant"`, `"Plant#/…"`), theirs included. */
function reachedFrom (schema: unknown, external: Record<string, unknown>): Record<string, unknown> {
  const reached: Record<string, unknown> = {}
  const walk = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return
    if (Array.isArray(node)) { node.forEach(walk); return }
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        const id = value.split('#')[0]
        if (id !== '' && !(id in reached) && id in external) {
          reached[id] = external[id]
          walk(external[id])
        }
      } else {
        walk(value)
      }
    }
  }
  walk(schema)
  return reached
}
