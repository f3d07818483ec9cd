import { fieldErrors } from '../http/error-handler.js'
import type { AjvError } from '../http/messages.js'
import { bodyValidator } from '../http/validation.js'
import { NewPlant, type PlantFields } from '../plants/schemas.js'

// A row is checked by the API's own NewPlant schema, validator and error wording, so an import
// accepts and refuses exactly what POST /v3/plant does.
const validate = bodyValidator().compile<PlantFields>(NewPlant)

export type RowCheck = { ok: true, fields: PlantFields } | { ok: false, reason: string }

/** Validates (and defaults, in place) one candidate plant; the reason reads like the API's `detail`. */
export function checkPlant (value: unknown): RowCheck {
  if (validate(value)) return { ok: true, fields: value }
  const reason = fieldErrors((validate.errors ?? []) as AjvError[]).map(({ path, message }) => `${path || '(body)'} ${message}`).join('; ')
  return { ok: false, reason }
}
