import { HttpProblem } from '../http/problem.js'

// Opaque keyset cursors: the last id of a page, so the next page is "id > cursor" (no OFFSET).
export const encodeCursor = (lastId: number): string => Buffer.from(`p:${lastId}`).toString('base64url')

export function decodeCursor (cursor: string | undefined): number {
  if (cursor === undefined) return 0
  const match = /^p:([1-9]\d{0,15})$/.exec(Buffer.from(cursor, 'base64url').toString())
  const id = match ? Number(match[1]) : NaN
  if (!Number.isSafeInteger(id) || encodeCursor(id) !== cursor) {
    throw new HttpProblem(400, 'invalid-input', 'cursor is malformed: pass the nextCursor of a previous page', [{ path: '/cursor', message: 'is malformed' }])
  }
  return id
}
