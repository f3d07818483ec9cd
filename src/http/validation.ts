import { Ajv, type Options } from 'ajv'
import type { FastifyInstance } from 'fastify'
import { decimalIntegersOnly } from './decimal-integers.js'

/**
 * Bodies are validated strictly: no type coercion and nothing silently removed, so `"12"` is not
 * a number and a misspelt member is an error. Path, query and headers arrive as text and are coerced.
 */
// verbose: errors carry their schema, so a pattern can explain itself (x-pattern-message).
const common: Options = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false, verbose: true }

/** The validator for JSON bodies; the CLI checks imported rows with the same one. */
export const bodyValidator = (): Ajv => new Ajv({ ...common, coerceTypes: false })

export function registerValidators (app: FastifyInstance): void {
  const body = bodyValidator()
  const text = new Ajv({ ...common, coerceTypes: 'array' })
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? body.compile(schema) : decimalIntegersOnly(schema, text.compile(schema))))
}
