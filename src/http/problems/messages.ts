import { filterKey } from '../../catalogue/query.js'

// Validation messages that say the fix: the allowed values, the limit, the rule broken; one
// message a rule, never Ajv's generic wording ("must be equal to one of the allowed values").

/** One of Ajv's errors, as far as the messages and the error handler read it. */
export interface AjvError {
  instancePath: string, schemaPath?: string, keyword: string, message?: string, params: Record<string, unknown>, parentSchema?: Record<string, unknown>, schema?: unknown, data?: unknown
}

/**
 * The rule for free text (a plant's name, category and tags): no white space at either end and no
 * lone UTF-16 surrogate. Refused rather than trimmed: the contract stores strings exactly as sent,
 * and " Fern" beside "Fern" would be two plants (or tags) a person cannot tell apart.
 */
export const TEXT_PATTERN = '^(?!\\s)(?![\\s\\S]*\\s$)[^\\uD800-\\uDFFF]*$'
/** How schema descriptions state the text rule. */
export const TEXT_RULE = 'no white space at either end (refused, not trimmed)'

/**
 * The rule for labels (a category, a tag): the text rule, and no control character either (a tab,
 * a line break, U+0000): a label is one line that filters, shows in a list and goes into a CSV cell,
 * where such a character is invisible or breaks the line.
 */
export const LABEL_PATTERN = '^(?!\\s)(?![\\s\\S]*\\s$)[^\\uD800-\\uDFFF\\u0000-\\u001F\\u007F]*$'
export const LABEL_RULE = `${TEXT_RULE}, no control character (a tab, a line break, U+0000–U+001F, U+007F)`

/**
 * Free text (a plant's description): stored exactly as sent, white space at either end included (a
 * paragraph may well end in a line break, and no two descriptions are told apart by eye); still not
 * white space alone, nor a lone UTF-16 surrogate.
 */
export const FREE_TEXT_PATTERN = '^(?=[\\s\\S]*\\S)[^\\uD800-\\uDFFF]*$'

const LONE_SURROGATE = /[\uD800-\uDFFF]/u
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u001F\u007F]/u

/** Why a string breaks TEXT_PATTERN (or LABEL_PATTERN: `label`), in the words of the rule it breaks. */
export function textRuleBroken (value: string, label = false): string {
  if (LONE_SURROGATE.test(value)) return 'must not hold a lone UTF-16 surrogate'
  if (label && CONTROL.test(value.trim())) return 'must not hold a control character (a tab, a line break, U+0000–U+001F, U+007F): a label is one line of text'
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
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}${typeof p.allowedValue === 'boolean' ? ' or left out' : ''}`
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}`
    case 'type': {
      const typed = `must be ${String(p.type).split(',').map((t) => TYPE_NAMES[t] ?? t).join(' or ')}`
      // A schema may say how to send the value it wants (a price as a decimal string).
      const fix = e.parentSchema?.['x-type-fix']
      return typeof fix === 'string' ? `${typed}: ${fix}` : typed
    }
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters`
    case 'minimum':
      return `must be at least ${String(p.limit)}`
    case 'maximum':
      return `must be at most ${String(p.limit)}`
    case 'minItems':
      return `must have at least ${items(p.limit)}`
    case 'maxItems':
      return `must have at most ${items(p.limit)}`
    case 'uniqueItems':
      return `must not repeat a value (items ${String(Math.min(Number(p.i), Number(p.j)))} and ${String(Math.max(Number(p.i), Number(p.j)))} are equal)`
    case 'pattern': {
      if ((e.schema === TEXT_PATTERN || e.schema === FREE_TEXT_PATTERN || e.schema === LABEL_PATTERN) && typeof e.data === 'string') return textRuleBroken(e.data, e.schema === LABEL_PATTERN)
      const explained = e.parentSchema?.['x-pattern-message']
      return typeof explained === 'string' ? explained : e.message ?? 'is invalid'
    }
    case 'x-gtin':
      return 'must end in a valid GTIN check digit (the GS1 check digit of the digits before it)'
    case 'x-distinct-ignoring-case': {
      const [i, j] = sameIgnoringCase(e.data as string[])!
      return `must not repeat a tag ignoring the case of A–Z, as filters do (items ${i} and ${j}, ${JSON.stringify((e.data as string[])[i])} and ${JSON.stringify((e.data as string[])[j])}, are one tag)`
    }
    default:
      return e.message ?? 'is invalid'
  }
}

const items = (n: unknown): string => Number(n) === 1 ? '1 item' : `${String(n)} items`

/**
 * The first two items that differ but are one tag to the filters ("BIG" and "big"), or undefined.
 * Items equal exactly are uniqueItems' to refuse.
 */
export function sameIgnoringCase (tags: string[]): [number, number] | undefined {
  const seen = new Map<string, number>()
  for (const [j, tag] of tags.entries()) {
    const i = seen.get(filterKey(tag))
    if (i !== undefined && tags[i] !== tag) return [i, j]
    if (i === undefined) seen.set(filterKey(tag), j)
  }
  return undefined
}
