import assert from 'node:assert/strict'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { ValidateFunction } from 'ajv'

interface Response { headers?: Record<string, unknown>, content?: Record<string, { schema: object }> }
interface Doc { paths: Record<string, Record<string, { responses: Record<string, Response> }>>, components?: { schemas?: object } }

/**
 * Checks responses against the served OpenAPI document: the status must be declared for the
 * operation and a JSON body must validate against its schema, so the document cannot drift.
 */
export class OpenApiCheck {
  private static readonly checks = new WeakMap<object, OpenApiCheck>()
  /** The check of `doc`, made once a process (its validators compiled once, for every app serving the same document). */
  static of (doc: object): OpenApiCheck {
    let check = OpenApiCheck.checks.get(doc)
    if (check === undefined) OpenApiCheck.checks.set(doc, check = new OpenApiCheck(doc as Doc))
    return check
  }

  private readonly ajv = new Ajv2020({ strict: false, allErrors: true })
  private readonly validators = new Map<string, ValidateFunction>()
  private readonly routes: Array<{ template: string, pattern: RegExp }>
  checked = 0

  constructor (private readonly doc: Doc) {
    // Fewer parameters first, as the router prefers a static segment: /v3/plant/changes is not
    // /v3/plant/{id}, nor /v3/plant/{id}/photos/order /v3/plant/{id}/photos/{photoId}.
    const params = (template: string): number => template.split('{').length
    this.routes = Object.keys(doc.paths).sort((a, b) => params(a) - params(b)).map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`)
    }))
  }

  check (method: string, url: string, status: number, headers: Record<string, unknown>, body: string): void {
    const contentType = headers['content-type'] as string | undefined
    const path = url.split('?')[0]
    const route = this.routes.find((r) => r.pattern.test(path))
    const operation = route && this.doc.paths[route.template][method === 'HEAD' ? 'get' : method.toLowerCase()]
    const where = `${method} ${path} → ${status}`
    // The document itself, its UI and the Prometheus text are not API operations.
    if (!operation && (path === '/v3/openapi.json' || path.startsWith('/v3/docs') || path === '/metrics') && status < 400) return
    if (!operation) {
      // Undocumented method or path: only the generic 404 / 405 problem is allowed.
      assert.ok(status === 404 || status === 405, `${where}: undocumented operation answered ${status}`)
      this.validate('#/problem', this.anyProblemSchema(), JSON.parse(body), where)
      this.checked++
      return
    }
    const declared = operation.responses[String(status)]
    assert.ok(declared, `${where}: status ${status} is not declared in the OpenAPI document`)
    for (const [name, header] of Object.entries(declared.headers ?? {})) {
      // A header the document says is sent only sometimes (Idempotent-Replayed) may be absent.
      if ((header as { schema?: Record<string, unknown> }).schema?.['x-present'] !== undefined) continue
      assert.ok(headers[name] !== undefined, `${where}: the document promises a ${name} header`)
    }
    if (method === 'HEAD' || status === 204 || status === 304) return
    const json = declared.content?.['application/json']
    if (json) {
      assert.match(contentType ?? '', /^application\/json/, `${where}: content-type ${contentType}`)
      this.validate(`${route!.template} ${method} ${status}`, json.schema, JSON.parse(body), where)
    }
    this.checked++
  }

  private validate (key: string, schema: object, value: unknown, where: string): void {
    let validate = this.validators.get(key)
    if (!validate) {
      // The document's components ride along, so `#/components/schemas/…` references resolve.
      validate = this.ajv.compile({ ...schema, components: this.doc.components })
      this.validators.set(key, validate)
    }
    assert.ok(validate(value), `${where}: body does not match the document: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`)
  }

  private anyProblemSchema (): object {
    return this.doc.paths['/v3/plant'].post.responses['405'].content!['application/json'].schema
  }
}
