// Validation messages that say the fix: the allowed values, the limit, the rule broken; one
// message a rule, never Ajv's generic wording ("must be equal to one of the allowed values").

/** One of Ajv's errors, as far as the messages and the error handler read it. */
export interface AjvError {
  instancePath: string, keyword: string, message?: string, params: Record<string, unknown>, parentSchema?: Record<string, unknown>, schema?: unknown, data?: unknown
}

/**
 * The rule for free text (a plant's name, category and tags): no white space at either end and no
 * lone UTF-16 surrogate. Refused rather than trimmed: the contract stores strings exactly as sent,
 * and " Fern" beside "Fern" would be two plants (or tags) a person cannot tell apart.
 */
export const TEXT_PATTERN = '^(?!\\s)(?![\\s\\S]*\\s$)[^\\uD800-\\uDFFF]*$'
/** How schema descriptions state the text rule. */
export const TEXT_RULE = 'no white space at either end (refused, not trimmed)'

const LONE_SURROGATE = /[\uD800-\uDFFF]/u

/** Why a string breaks TEXT_PATTERN, in the words of the rule it breaks. */
export function textRuleBroken (value: string): string {
  if (LONE_SURROGATE.test(value)) return 'must not hold a lone UTF-16 surrogate'
  if (value.trim() === '') return 'must not be only white space'
  return 'must not begin or end with white space'
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string', integer: 'an integer', number: 'a number', boolean: 'true or false', array: 'an array', object: 'an object', null: 'null'
}

/** The message for one Ajv error (the path is the caller's). */
export function messageOf (e: AjvError): string {
  const p = e.params
  switch (e.keyword) {
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}`
    case 'type':
      return `must be ${String(p.type).split(',').map((t) => TYPE_NAMES[t] ?? t).join(' or ')}`
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters`
    case 'minimum':
      return `must be at least ${String(p.limit)}`
    case 'maximum':
      return `must be at most ${String(p.limit)}`
    case 'minItems':
      return `must have at least ${String(p.limit)} items`
    case 'maxItems':
      return `must have at most ${String(p.limit)} items`
    case 'uniqueItems':
      return `must not repeat a value (items ${String(Math.min(Number(p.i), Number(p.j)))} and ${String(Math.max(Number(p.i), Number(p.j)))} are equal)`
    case 'pattern': {
      if (e.schema === TEXT_PATTERN && typeof e.data === 'string') return textRuleBroken(e.data)
      const explained = e.parentSchema?.['x-pattern-message']
      return typeof explained === 'string' ? explained : e.message ?? 'is invalid'
    }
    case 'x-gtin':
      return 'must end in a valid GTIN check digit (the GS1 check digit of the digits before it)'
    default:
      return e.message ?? 'is invalid'
  }
}
