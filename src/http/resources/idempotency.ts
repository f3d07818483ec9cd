import type { FastifyRequest } from 'fastify'

// What every write route stores beside an Idempotency-Key: the key as claimed (the request it named: store/idempotency.ts requestHash).

/** An Idempotency-Key as stored: scoped per API key by a prefix, so one client's key never replays another's response. */
export const idempotencyClaimKey = (request: FastifyRequest, key: string): string => request.writer === '' ? key : `${request.writer}:${key}`
