import { Ajv, type Options } from 'ajv'
import type { FastifyInstance } from 'fastify'
import { components } from './components.js'
import { decimalIntegersOnly, singleValuesOnly } from './decimal-integers.js'

/**
 * Bodies are validated strictly: no type coercion and nothing silently removed, so `"12"` is not
 * a number and a misspelt member is an error. Path, query and headers arrive as text and are coerced.
 */
// verbose: errors carry their schema and value, so a message can name the rule broken (see messages.ts).
const common: Options = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false, verbose: true }

const addedTo = new WeakMap<Ajv, Set<string>>()
/** Adds the named components (src/http/components.ts) not yet known to `ajv`, so `$ref`s to them resolve. */
function withComponents (ajv: Ajv): Ajv {
  let added = addedTo.get(ajv)
  if (!added) addedTo.set(ajv, added = new Set())
  for (const schema of components()) {
    if (!added.has(schema.$id!)) ajv.addSchema(schema)
    added.add(schema.$id!)
  }
  return ajv
}

/** The validator for JSON bodies; the CLI checks imported rows with the same one. */
export const bodyValidator = (): Ajv => withComponents(new Ajv({ ...common, coerceTypes: false }))

export function registerValidators (app: FastifyInstance): void {
  const body = bodyValidator()
  const text = new Ajv({ ...common, coerceTypes: 'array' })
  // Compiled when the app is ready: every component is declared by then.
  app.setValidatorCompiler(({ schema, httpPart }) => httpPart === 'body'
    ? withComponents(body).compile(schema)
    : singleValuesOnly(schema, decimalIntegersOnly(schema, withComponents(text).compile(schema))))
}
