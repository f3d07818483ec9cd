import type { components } from '../src/client/generated/openapi.js'
import { timing } from './dom.js'
import { askKey, forgetKey, keyRequired, storedKey } from './key.js'

// The public API as the page uses it: every answer that is not a success becomes an ApiError
// carrying the contract's problem body, so each caller can say plainly what went wrong. The bodies'
// types are the generated client's (a type-only import: nothing of it reaches dist/web).

type Schemas = components['schemas']

export type Photo = Schemas['Photo']
export type Plant = Schemas['Plant']
export type Change = Schemas['Change']
export type Problem = Schemas['Problem']
export type Inventory = Schemas['Inventory']
export type StockLevel = Schemas['StockLevel']
export type StockLevels = Schemas['StockLevels']
export type LocationList = Schemas['LocationList']
export type MovementResult = Schemas['MovementResult']

export class ApiError extends Error {
  constructor (readonly status: number, readonly problem: Problem | undefined, readonly retryAfter: string | null = null) {
    super(problem?.detail ?? problem?.title ?? `HTTP ${status}`)
  }

  /** The problem's stable code (`not-found`, `route-not-found`…), '' when the body had none. */
  get code (): string {
    return this.problem?.type.split('/').pop() ?? ''
  }
}

/** The person closed the key dialog: the write was not sent. */
export class Cancelled extends Error {}

export interface Answer<T> { body: T, etag: string | null, position: string | null }

interface Options {
  body?: unknown
  /** Sent as is (a photo), with this content type. */
  raw?: Blob
  contentType?: string
  ifMatch?: string
  idempotencyKey?: string
  signal?: AbortSignal
  /** A read that needs the staff key as writes do (the trash lists what staff deleted). */
  key?: boolean
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

async function send (method: string, path: string, options: Options, key: string | null): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (key !== null) headers.authorization = `Bearer ${key}`
  if (options.ifMatch !== undefined) headers['if-match'] = options.ifMatch
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey
  let body: BodyInit | undefined
  if (options.raw !== undefined) {
    body = options.raw
    headers['content-type'] = options.contentType ?? options.raw.type
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body)
    headers['content-type'] = options.contentType ?? 'application/json'
  }
  try {
    return await fetch(path, { method, headers, body, signal: options.signal, cache: 'no-store' })
  } catch (err) {
    if (options.signal?.aborted === true) throw err
    throw new ApiError(0, undefined)
  }
}

/** One request; writes carry the tab's key, asking for one first when the service needs it. */
export async function api<T = unknown> (method: string, path: string, options: Options = {}): Promise<Answer<T>> {
  const write = WRITES.has(method) || options.key === true
  let key = write ? storedKey() : null
  if (write && key === null && keyRequired) {
    key = await askKey(false)
    if (key === null) throw new Cancelled()
  }
  let res = await send(method, path, options, key)
  while (write && res.status === 401) {
    // A refused key is forgotten at once; the person may give another one and the write goes again.
    forgetKey()
    key = await askKey(true)
    if (key === null) throw new ApiError(401, await problemOf(res))
    res = await send(method, path, options, key)
  }
  if (!res.ok) throw new ApiError(res.status, await problemOf(res), res.headers.get('retry-after'))
  const text = res.status === 204 ? '' : await res.text()
  return {
    body: (text === '' ? undefined : JSON.parse(text)) as T,
    etag: res.headers.get('etag'),
    position: res.headers.get('feed-position')
  }
}

async function problemOf (res: Response): Promise<Problem | undefined> {
  try {
    const body = await res.json() as Problem
    return typeof body?.type === 'string' ? body : undefined
  } catch {
    return undefined
  }
}

/** How every message that the catalogue could not be reached begins: they go when it is back. */
export const UNREACHABLE = 'The catalogue cannot be reached.'

/** What to tell staff about a refusal that has no better place (field errors go next to their fields). */
export function describe (err: unknown, what = 'This plant'): string {
  if (err instanceof Cancelled) return 'Nothing was saved: your staff key is needed to make changes.'
  if (!(err instanceof ApiError)) return 'Something went wrong in the page. Reload it and try again.'
  const detail = err.problem?.detail ?? ''
  switch (err.status) {
    case 0: return `${UNREACHABLE} Check the connection and try again.`
    case 401: return 'Key refused: the catalogue did not accept your staff key, so nothing was changed.'
    case 403: return 'Your staff key does not allow this. Ask your manager.'
    case 404: return `${what} no longer exists: someone deleted it.`
    case 409: return detail || 'That cannot be done in the plant’s current state.'
    case 412: return 'Changed by someone else while you were editing.'
    case 413: return 'That file is too large (photos can be at most 10 MB).'
    case 415: return 'That kind of file is not accepted: use a JPEG, PNG or WebP image.'
    case 429: return `Too many requests just now: try again${err.retryAfter ? ` in ${err.retryAfter} s` : ' in a moment'}.`
    case 503: return 'The catalogue is busy or restarting: try again in a moment.'
  }
  if (err.status >= 500) return `Something went wrong on the server: try again.${err.problem?.requestId ? ` (Reference ${err.problem.requestId})` : ''}`
  return detail || err.problem?.title || `The request was refused (HTTP ${err.status}).`
}

export const isAbort = (err: unknown): boolean => err instanceof DOMException && err.name === 'AbortError'

/** A refusal that says "not now" rather than "no": a busy or restarting catalogue, or no connection. */
const passing = (err: unknown): err is ApiError => err instanceof ApiError && [0, 429, 503].includes(err.status)

/**
 * A read that nothing else will ask again soon (a total, the counts), asked up to `tries` times
 * while the catalogue answers "busy", after its Retry-After (1 s when it names none, doubling):
 * one refusal under load must not leave a figure missing until the next change. `stop` ends the
 * asking (the read it belongs to was overtaken or failed): the last refusal is then thrown.
 */
export async function patiently<T> (read: () => Promise<T>, stop: AbortSignal, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read()
    } catch (err) {
      if (!passing(err) || attempt >= tries || stop.aborted) throw err
      const seconds = Math.min(10, Number(err.retryAfter) || 1) * 2 ** (attempt - 1)
      await new Promise<void>((resolve) => {
        const timer = window.setTimeout(resolve, seconds * timing('retryMs'))
        stop.addEventListener('abort', () => { window.clearTimeout(timer); resolve() }, { once: true })
      })
      if (stop.aborted) throw err
    }
  }
}
