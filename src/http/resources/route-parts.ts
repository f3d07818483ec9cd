import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PlantStore } from '../../store/plant-store.js'
import { HttpProblem } from '../problems/problem.js'
import type { QueuedBytes } from '../connections/queued-bytes.js'

// What the routes of every resource (plants, photos, the feed) share.

export interface RouteOptions {
  store: PlantStore
  /** The bytes queued to clients: a route that may send a large answer admits it there first (503 past MAX_QUEUED_BYTES). */
  queued: QueuedBytes
}

// Path ids must be written canonically: the text coercion would otherwise read "1e3" or "0x10" as numbers.
const CANONICAL_ID = /^[1-9][0-9]*$/
const invalidId = (message: string) => new HttpProblem(400, 'invalid-id', `/id ${message}`, [{ path: '/id', message }])

// A callback hook, not an async one: it runs on every read by id, and a promise per request shows in the profile.
export function canonicalId (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const { id } = request.params as { id: string }
  if (!CANONICAL_ID.test(id)) done(invalidId('must be a positive integer written in decimal digits'))
  // Longer than any safe integer: say the limit (16 digits over it are left to the schema's maximum, with the same words).
  else if (id.length > 16) done(invalidId(`must be at most ${Number.MAX_SAFE_INTEGER}`))
  else done()
}

/**
 * The statuses of the guards a deployment may switch on: 401 on writes (when API keys are
 * configured) and 429 (when a rate limit is set). Declared whatever the settings, with those words,
 * so every deployment serves one document and a generated client knows every status it can meet.
 */
export const guardStatuses = (write: boolean): number[] => write ? [401, 429] : [429]
