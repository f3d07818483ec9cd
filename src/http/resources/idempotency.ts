import { hash } from 'node:crypto'
import type { FastifyRequest } from 'fastify'

// What every write route stores beside an Idempotency-Key: the key as claimed, and the request it named.

/** An Idempotency-Key as stored: scoped per API key by a prefix, so one client's key never replays another's response. */
export const idempotencyClaimKey = (request: FastifyRequest, key: string): string => request.writer === '' ? key : `${request.writer}:${key}`

/**
 * What an Idempotency-Key's request was, as stored beside the key: the SHA-256 of `parts` as JSON.
 * A retry is matched by comparing it as a string, also across upgrades: its form never changes.
 */
export const requestHash = (parts: unknown): string => hash('sha256', JSON.stringify(parts), 'base64url')
