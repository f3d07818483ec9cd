import type { ValidateFunction } from 'ajv'
import { MAX_BATCH_OPERATIONS } from '../catalogue/batch.js'
import type { AjvError } from '../http/problems/messages.js'
import { bodyValidator } from '../http/input/validation.js'
import { OPERATIONS } from './batch-schemas.js'

// The batch body validated an operation at a time, each by the schema its `op` names: a union
// validated as a whole reports every branch's errors for every operation (Ajv's anyOf), where a
// client wants the one operation at fault and the member in it (/operations/3/plant/name).

type FieldError = AjvError & { schemaPath: string }
type Validate = ((body: unknown) => boolean) & { errors: FieldError[] | null }

const OP_NAMES = Object.keys(OPERATIONS) as Array<keyof typeof OPERATIONS>

const at = (path: string, keyword: string, message: string, params: Record<string, unknown> = {}): FieldError =>
  ({ instancePath: path, schemaPath: '#', keyword, message, params })

export function batchBodyValidator (): Validate {
  const ajv = bodyValidator()
  const byOp = new Map<string, ValidateFunction>(OP_NAMES.map((op) => [op, ajv.getSchema(OPERATIONS[op].$id)!]))
  const validate = ((body: unknown): boolean => {
    const errors = outlineErrors(body)
    const operations = (body as { operations?: unknown } | null)?.operations
    // Every operation is checked, each by the schema of the op it names, in order: all that is wrong is said at once.
    if (Array.isArray(operations)) {
      operations.forEach((operation, i) => {
        const outline = operationOutlineError(operation, i)
        if (outline !== undefined) {
          errors.push(outline)
          return
        }
        const check = byOp.get((operation as { op: string }).op)!
        if (!check(operation)) for (const e of check.errors!) errors.push({ ...e, instancePath: `/operations/${i}${e.instancePath}` } as FieldError)
      })
    }
    validate.errors = errors.length > 0 ? errors : null
    return errors.length === 0
  }) as Validate
  validate.errors = null
  return validate
}

/** The body's outline: an object of `operations` only, an array of 1–500. */
function outlineErrors (body: unknown): FieldError[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [at('', 'type', 'must be an object', { type: 'object' })]
  const errors: FieldError[] = []
  for (const member of Object.keys(body)) {
    if (member !== 'operations') errors.push(at('', 'additionalProperties', 'must NOT have additional properties', { additionalProperty: member }))
  }
  const { operations } = body as { operations?: unknown }
  if (operations === undefined) return [...errors, at('', 'required', 'is required', { missingProperty: 'operations' })]
  if (!Array.isArray(operations)) return [...errors, at('/operations', 'type', 'must be an array', { type: 'array' })]
  // A keyword of its own, so the messages (http/problems/messages.ts) keep these words rather than minItems' generic "items".
  if (operations.length === 0) errors.push(at('/operations', 'x-operation-count', 'must hold at least 1 operation', { limit: 1 }))
  if (operations.length > MAX_BATCH_OPERATIONS) errors.push(at('/operations', 'x-operation-count', `must hold at most ${MAX_BATCH_OPERATIONS} operations`, { limit: MAX_BATCH_OPERATIONS }))
  return errors
}

/** An operation that is not an object naming a known `op`: no schema to check it by. */
function operationOutlineError (operation: unknown, i: number): FieldError | undefined {
  if (typeof operation !== 'object' || operation === null || Array.isArray(operation)) return at(`/operations/${i}`, 'type', 'must be an object', { type: 'object' })
  const { op } = operation as { op?: unknown }
  if (op === undefined) return at(`/operations/${i}`, 'required', 'is required', { missingProperty: 'op' })
  if (typeof op !== 'string' || !OP_NAMES.includes(op as keyof typeof OPERATIONS)) {
    return at(`/operations/${i}/op`, 'enum', `must be one of ${OP_NAMES.join(', ')}`, { allowedValues: OP_NAMES })
  }
  return undefined
}
