import type { ErrorObject, ValidateFunction } from 'ajv'

// Path, query and header values arrive as text and Ajv coerces them, which hides two mistakes;
// each is checked on the raw value first and answered in its own words.

const DECIMAL = /^-?(?:0|[1-9][0-9]*)$/

type Schema = { type?: unknown, items?: Schema, properties?: Record<string, Schema> }
type Data = Record<string, unknown> | null
type Check = (data: Data) => ErrorObject | undefined

const wantsInteger = (s: Schema | undefined): boolean => s?.type === 'integer' || (Array.isArray(s?.type) && s.type.includes('integer'))
const refusal = (instancePath: string, keyword: string, message: string): ErrorObject =>
  ({ instancePath, schemaPath: '', keyword, params: {}, message })

/**
 * A query parameter that takes one value but is given twice (`?sort=name&sort=id`) arrives as an
 * array, which Ajv then refuses with the rule for one value ("must be one of …"), hiding the cause.
 */
function singleValues (properties: Record<string, Schema>): Check | undefined {
  const names = Object.keys(properties).filter((n) => typeof properties[n].type === 'string' && properties[n].type !== 'array')
  if (names.length === 0) return undefined
  return (data) => {
    const repeated = names.find((name) => Array.isArray(data?.[name]))
    return repeated === undefined ? undefined : refusal(`/${repeated}`, 'repeated', 'is given more than once')
  }
}

/**
 * An integer member would take `1.0`, `1e1` or `0x10` (`?limit=1e1` listed ten plants). Like an
 * integer in a JSON body, it must be written in decimal digits; the schema's own range still applies after.
 */
function decimalIntegers (properties: Record<string, Schema>): Check | undefined {
  const names = Object.keys(properties).filter((n) => wantsInteger(properties[n]) || wantsInteger(properties[n].items))
  if (names.length === 0) return undefined
  return (data) => {
    for (const name of names) {
      const value = data?.[name]
      const values = Array.isArray(value) ? value : [value]
      const bad = values.findIndex((v) => typeof v === 'string' && !DECIMAL.test(v))
      if (bad >= 0) return refusal(Array.isArray(value) ? `/${name}/${bad}` : `/${name}`, 'integerNotation', 'must be an integer written in decimal digits, without leading zeros')
    }
    return undefined
  }
}

/**
 * A text part's validator that first runs the checks its schema needs on the raw data, a repeated
 * value before an integer's notation: the first error one names is the answer and Ajv never sees
 * the value; otherwise Ajv's own answer stands.
 */
export function withPrecheck (schema: unknown, validate: ValidateFunction): ValidateFunction {
  const properties = (schema as Schema).properties ?? {}
  const checks = [singleValues(properties), decimalIntegers(properties)].filter((check) => check !== undefined)
  if (checks.length === 0) return validate
  const checked = function (this: unknown, data: Data, ...rest: unknown[]) {
    for (const check of checks) {
      const error = check(data)
      if (error) {
        checked.errors = [error]
        return false
      }
    }
    const valid = (validate as (...a: unknown[]) => boolean).call(this, data, ...rest)
    checked.errors = validate.errors
    return valid
  } as ValidateFunction & { errors?: ErrorObject[] | null }
  return Object.assign(checked, { schema: validate.schema, schemaEnv: validate.schemaEnv })
}
