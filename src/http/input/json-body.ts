import type { FastifyInstance, FastifyRequest } from 'fastify'
import { components } from '../schemas/components.js'
import { findMembers, MAX_DEPTH } from './json-text-scan.js'

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** A member named twice in one object: which one counts would be a guess, so neither does. */
export class DuplicateMember extends Error {
  constructor (readonly path: string) {
    super(`${path} is given more than once`)
  }
}

/**
 * JSON bodies are decoded as strict UTF-8: invalid bytes are invalid input, not silently replaced
 * by U+FFFD and stored. Parsing itself stays Fastify's (which refuses __proto__ and constructor.prototype);
 * then a member named twice is refused, and so is an integer field written with a fraction or an
 * exponent (`"id": 1.0`, `1e2`): the schema sees only the parsed number, which is an integer.
 */
export function registerJsonBody (app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, strictJsonParser(app))
}

/** The strict UTF-8 JSON parser, for another media type that carries JSON (a merge patch). */
export function strictJsonParser (app: FastifyInstance): Parameters<FastifyInstance['addContentTypeParser']>[2] & ((...args: any[]) => void) {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  return (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    let text: string
    try {
      text = utf8.decode(body as Buffer)
    } catch {
      done(Object.assign(new Error('The body is not valid UTF-8'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_UTF8' }), undefined)
      return
    }
    parseJson(request, text, (err: Error | null, value: unknown) => {
      if (err) {
        done(err, undefined)
        return
      }
      const found = findMembers(text)
      if (found.tooDeep) {
        done(Object.assign(new Error(`The body nests arrays and objects deeper than ${MAX_DEPTH} levels`), { statusCode: 400, code: 'FST_ERR_CTP_TOO_DEEP' }), undefined)
        return
      }
      if (found.duplicate !== undefined) {
        done(new DuplicateMember(found.duplicate), undefined)
        return
      }
      const inexact = found.fractional.filter((path) => wantsInteger(request, path))
      done(inexact.length > 0 ? notWrittenAsIntegers(inexact) : null, value)
    })
  }
}

const INTEGER_MESSAGE = 'must be an integer, written without a fraction or exponent'

/** The refusal in the shape of a schema validation error, so that it is reported like one (an id: "Invalid ID supplied"). */
function notWrittenAsIntegers (paths: string[]): Error {
  return Object.assign(new Error(paths.map((p) => `${p} ${INTEGER_MESSAGE}`).join('; ')), {
    statusCode: 400,
    validationContext: 'body',
    validation: paths.map((instancePath) => ({ instancePath, keyword: 'integerNotation', message: INTEGER_MESSAGE, params: {} }))
  })
}

type Schema = Record<string, unknown>

/** Whether the route's body schema wants an integer at `path` (a number elsewhere may well be 1.5). */
function wantsInteger (request: FastifyRequest, path: string): boolean {
  const root = request.routeOptions.schema?.body as Schema | undefined
  if (root === undefined) return false
  const steps = path.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  return schemasAt(root, steps).some((s) => s.type === 'integer' || (Array.isArray(s.type) && s.type.includes('integer')))
}

function schemasAt (schema: Schema, steps: string[]): Schema[] {
  // Bodies name their schemas as components ($ref: 'PlantUpdate').
  if (typeof schema.$ref === 'string') {
    const named = components().find((c) => c.$id === schema.$ref) as Schema | undefined
    return named ? schemasAt(named, steps) : []
  }
  const branches = ['anyOf', 'oneOf', 'allOf'].flatMap((k) => (Array.isArray(schema[k]) ? schema[k] as Schema[] : []))
  const fromBranches = branches.flatMap((b) => schemasAt(b, steps))
  if (steps.length === 0) return [schema, ...fromBranches]
  const [step, ...rest] = steps
  const properties = schema.properties as Record<string, Schema> | undefined
  const next = (properties !== undefined && Object.hasOwn(properties, step) ? properties[step] : undefined) ??
    (Array.isArray(schema.items) ? (schema.items as Schema[])[Number(step)] : schema.items as Schema | undefined) ??
    (typeof schema.additionalProperties === 'object' ? schema.additionalProperties as Schema : undefined)
  return [...(next ? schemasAt(next, rest) : []), ...fromBranches]
}
