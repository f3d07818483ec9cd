import { fieldErrors } from '../http/error-handler.js'
import type { AjvError } from '../http/problems/messages.js'
import { bodyValidator } from '../http/input/validation.js'
import { NewPlant, PlantPatch, type PlantFields } from '../plants/schemas.js'

// A row is checked by the API's own schemas, validator and error wording: a new plant by NewPlant,
// so an import accepts and refuses exactly what POST /v3/plant does; the change to an existing
// plant by PlantPatch, as PATCH /v3/plant/{id} (and a batch's patch) does.
const ajv = bodyValidator()
const validate = ajv.compile<PlantFields>(NewPlant)
const validatePatch = ajv.compile<PlantPatch>(PlantPatch)

export type RowCheck = { ok: true, fields: PlantFields } | { ok: false, reason: string }
export type PatchCheck = { ok: true, patch: PlantPatch } | { ok: false, reason: string }

const reasonOf = (errors: unknown): string =>
  fieldErrors((errors ?? []) as AjvError[]).map(({ path, message }) => `${path || '(body)'} ${message}`).join('; ')

/** Validates (and defaults, in place) one candidate plant; the reason reads like the API's `detail`. */
export function checkPlant (value: unknown): RowCheck {
  if (validate(value)) return { ok: true, fields: value }
  return { ok: false, reason: reasonOf(validate.errors) }
}

/** Validates the members a row changes in an existing plant. */
export function checkPatch (value: unknown): PatchCheck {
  if (validatePatch(value)) return { ok: true, patch: value }
  return { ok: false, reason: reasonOf(validatePatch.errors) }
}
