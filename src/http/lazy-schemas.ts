import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler'

// Fastify compiles every route's validators and response serialisers when the app becomes ready:
// some 80 functions (every route, HEAD twins and every status), about 40 % of the CPU of a cold
// start, for a first request that needs two of them. Here each is compiled when first used
// instead, and `compileRest` compiles the others once the service is listening (server.ts), so
// neither readiness nor, a moment later, a first request waits for them, and a schema that does
// not compile is still found at start (test/start-up.test.ts compiles them all).

type Compiled = (...args: any[]) => any

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

  /** Fastify's own serialiser factory (fast-json-stringify), each serialiser compiled when first used. */
  serializers (): SerializerFactory {
    const eager = SerializerSelector()
    return (externalSchemas, options) => {
      const compile = eager(externalSchemas, options)
      return (route) => this.lazy(() => compile(route))
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
