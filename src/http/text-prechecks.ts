import type { ErrorObject, ValidateFunction } from 'ajv'

/**
 * Path, query and header values arrive as text and Ajv coerces them, so an integer member would
 * take `1.0`, `1e1` or `0x10` (`?limit=1e1` listed ten plants). Like an integer in a JSON body, it
 * must be written in decimal digits; the schema's own range still applies after.
 */
const DECIMAL = /^-?(?:0|[1-9][0-9]*)$/
const MESSAGE = 'must be an integer written in decimal digits, without leading zeros'

type Schema = { type?: unknown, items?: Schema, properties?: Record<string, Schema> }

const wantsInteger = (s: Schema | undefined): boolean => s?.type === 'integer' || (Array.isArray(s?.type) && s.type.includes('integer'))

/**
 * A validator that first runs `check` on the raw data: when it names an error, that error is the
 * answer and Ajv never sees the value; otherwise Ajv's own answer stands.
 */
function withPrecheck (validate: ValidateFunction, check: (data: Record<string, unknown> | null) => ErrorObject | undefined): ValidateFunction {
  const checked = function (this: unknown, data: Record<string, unknown> | null, ...rest: unknown[]) {
    const error = check(data)
    if (error) {
      checked.errors = [error]
      return false
    }
    const valid = (validate as (...a: unknown[]) => boolean).call(this, data, ...rest)
    checked.errors = validate.errors
    return valid
  } as ValidateFunction & { errors?: ErrorObject[] | null }
  return Object.assign(checked, { schema: validate.schema, schemaEnv: validate.schemaEnv })
}

/** Wraps a text part's validator so that its integer members (or arrays of them) refuse other notations. */
export function decimalIntegersOnly (schema: unknown, validate: ValidateFunction): ValidateFunction {
  const properties = (schema as Schema).properties ?? {}
  const names = Object.keys(properties).filter((n) => wantsInteger(properties[n]) || wantsInteger(properties[n].items))
  if (names.length === 0) return validate
  return withPrecheck(validate, (data) => {
    for (const name of names) {
      const value = data?.[name]
      const values = Array.isArray(value) ? value : [value]
      const bad = values.findIndex((v) => typeof v === 'string' && !DECIMAL.test(v))
      if (bad >= 0) {
        const instancePath = Array.isArray(value) ? `/${name}/${bad}` : `/${name}`
        return { instancePath, schemaPath: '', keyword: 'integerNotation', params: {}, message: MESSAGE }
      }
    }
    return undefined
  })
}

/**
 * A query parameter that takes one value but is given twice (`?sort=name&sort=id`) arrives as an
 * array, which Ajv then refuses with the rule for one value ("must be one of …"), hiding the cause.
 */
export function singleValuesOnly (schema: unknown, validate: ValidateFunction): ValidateFunction {
  const properties = (schema as Schema).properties ?? {}
  const names = Object.keys(properties).filter((n) => typeof properties[n].type === 'string' && properties[n].type !== 'array')
  if (names.length === 0) return validate
  return withPrecheck(validate, (data) => {
    const repeated = names.find((name) => Array.isArray(data?.[name]))
    return repeated === undefined
      ? undefined
      : { instancePath: `/${repeated}`, schemaPath: '', keyword: 'repeated', params: {}, message: 'is given more than once' }
  })
}
