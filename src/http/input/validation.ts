import { Ajv, type Options } from 'ajv'
import { GTIN_PATTERN, isGtin } from '../../catalogue/price-sku-barcode.js'
import type { FastifyInstance } from 'fastify'
import type { LazySchemas } from '../schemas/lazy-schemas.js'
import { components } from '../schemas/components.js'
import { sameIgnoringCase } from '../problems/messages.js'
import { withPrecheck } from './raw-value-checks.js'

/**
 * Bodies are validated strictly: no type coercion and nothing silently removed, so `"12"` is not
 * a number and a misspelt member is an error. Path, query and headers arrive as text and are coerced.
 */
// verbose: errors carry their schema and value, so a message can name the rule broken (see messages.ts).
const common: Options = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false, verbose: true }

const addedTo = new WeakMap<Ajv, Set<string>>()
/** Adds the named components (src/http/schemas/components.ts) not yet known to `ajv`, so `$ref`s to them resolve. */
function withComponents (ajv: Ajv): Ajv {
  let added = addedTo.get(ajv)
  if (!added) addedTo.set(ajv, added = new Set())
  for (const schema of components()) {
    if (!added.has(schema.$id!)) ajv.addSchema(schema)
    added.add(schema.$id!)
  }
  return ajv
}

const GTIN_SHAPE = new RegExp(GTIN_PATTERN)

/**
 * `x-gtin: true`: a string of GTIN_PATTERN's shape must also carry a valid check digit, which no
 * JSON Schema keyword can say (an `x-` keyword: other readers of the document ignore it).
 */
function withKeywords (ajv: Ajv): Ajv {
  // A string of another shape is the pattern's to refuse: one error a value.
  ajv.addKeyword({ keyword: 'x-gtin', type: 'string', schemaType: 'boolean', validate: (on: boolean, data: string) => !on || !GTIN_SHAPE.test(data) || isGtin(data) })
  // `x-distinct-ignoring-case: true`: tags the filters take for one ("BIG" and "big") are refused, as a repeated tag is.
  ajv.addKeyword({ keyword: 'x-distinct-ignoring-case', type: 'array', schemaType: 'boolean', validate: (on: boolean, data: unknown[]) => !on || data.some((t) => typeof t !== 'string') || sameIgnoringCase(data as string[]) === undefined })
  return ajv
}

/** The validator for JSON bodies; the CLI checks imported rows with the same one. */
export const bodyValidator = (): Ajv => withComponents(withKeywords(new Ajv({ ...common, coerceTypes: false })))

// Made with the first validator compiled (adding the components compiles Ajv's meta-schema), and
// shared by every app of the process, as the compiled validators are: a second app (the tests build
// hundreds; a cluster's worker builds one) compiles only what no app before it did.
let body: Ajv | undefined
let text: Ajv | undefined
const compiled = new Map<string, Compiled>()
type Compiled = ReturnType<Ajv['compile']>

/** The validator of `schema` for a body (strict) or for text (path, query, headers: coerced), compiled once a process. */
function validatorOf (schema: object, part: 'body' | 'text'): Compiled {
  const key = `${part} ${JSON.stringify(schema)}`
  let validate = compiled.get(key)
  if (validate === undefined) {
    validate = part === 'body'
      ? withComponents(body ??= bodyValidator()).compile(schema)
      : withPrecheck(schema, withComponents(text ??= withKeywords(new Ajv({ ...common, coerceTypes: 'array' }))).compile(schema))
    compiled.set(key, validate)
  }
  return validate
}

/** The validator of a query string's schema, as the routes check it: the CLI takes a list's filters through it. */
export const queryValidator = (schema: object): Compiled => validatorOf(schema, 'text')

/** How many validators this process has compiled. */
export const validatorsCompiled = (): number => compiled.size

export function registerValidators (app: FastifyInstance, schemas: LazySchemas): void {
  // Compiled when first used (or after listening: see lazy-schemas.ts); every component is declared by then.
  app.setValidatorCompiler(({ schema, httpPart }) => schemas.lazy(() => validatorOf(schema, httpPart === 'body' ? 'body' : 'text')))
}
