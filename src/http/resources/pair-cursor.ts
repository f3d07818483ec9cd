import { HttpProblem } from '../problems/problem.js'

// The opaque cursor of the history and the trash pages: two whole numbers (base64url JSON) that
// name where the last page ended. Read back only if it is exactly what encodePair wrote.

export const encodePair = (a: number, b: number): string => Buffer.from(JSON.stringify([a, b])).toString('base64url')

/** The two numbers of a cursor from encodePair, each at least `least`; anything else is a 400. */
export function decodePair (cursor: string, least: number): [number, number] {
  let parts: unknown
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString())
  } catch {
    parts = undefined
  }
  if (!Array.isArray(parts) || parts.length !== 2 || !parts.every((n) => Number.isSafeInteger(n) && n >= least) || encodePair(parts[0], parts[1]) !== cursor) {
    throw new HttpProblem(400, 'invalid-input', 'cursor is malformed: pass the nextCursor of a previous page', [{ path: '/cursor', message: 'is malformed' }])
  }
  return [parts[0], parts[1]]
}
