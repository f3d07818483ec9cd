import { Ajv } from 'ajv'
import { NewPlant, type PlantFields } from '../plants/schemas.js'

// A row is checked against the API's own NewPlant schema with the API's validator settings
// (src/http/validation.ts): no coercion, nothing removed, defaults filled in. A test compares
// the verdicts and messages with those of POST /v3/plant, so the two cannot drift apart.
const ajv = new Ajv({ allErrors: true, useDefaults: true, removeAdditional: false, strict: false, coerceTypes: false, verbose: true })
const validate = ajv.compile<PlantFields>(NewPlant)

export type RowCheck = { ok: true, fields: PlantFields } | { ok: false, reason: string }

/** Validates (and defaults, in place) one candidate plant; the reason reads like the API's `detail`. */
export function checkPlant (value: unknown): RowCheck {
  if (validate(value)) return { ok: true, fields: value }
  const reason = (validate.errors ?? []).map((e) => {
    if (e.keyword === 'required') return `${e.instancePath}/${String(e.params.missingProperty)} is required`
    if (e.keyword === 'additionalProperties') return `${e.instancePath}/${escapePointer(String(e.params.additionalProperty))} is not a known field`
    // A pattern explains itself through the schema's x-pattern-message, as in the API's error handler.
    const explained = (e.parentSchema as Record<string, unknown> | undefined)?.['x-pattern-message']
    if (e.keyword === 'pattern' && typeof explained === 'string') return `${e.instancePath} ${explained}`
    if (e.keyword === 'pattern' && e.instancePath.endsWith('/name')) return `${e.instancePath} must not be only white space`
    return `${e.instancePath || '(body)'} ${e.message ?? 'is invalid'}`
  }).join('; ')
  return { ok: false, reason }
}

const escapePointer = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1')
