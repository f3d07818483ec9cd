// A failed connection in a person's words: fetch and node-postgres bury the cause (ECONNREFUSED…)
// under "fetch failed" or an AggregateError; this digs it out.

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (nothing listens there)',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed by the other side',
  EPIPE: 'connection closed by the other side'
}

/** The outermost error or cause that carries an error code, named: "connection refused (nothing listens there) [ECONNREFUSED]". */
export function reasonOf (err: unknown): string {
  let found: { code: string, message: string } | undefined
  const visit = (e: unknown, depth: number): void => {
    if (depth > 5 || typeof e !== 'object' || e === null) return
    const { code, message, cause, errors } = e as { code?: unknown, message?: unknown, cause?: unknown, errors?: unknown }
    if (typeof code === 'string' && found === undefined) found = { code, message: typeof message === 'string' ? message : code }
    visit(cause, depth + 1)
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1)
  }
  visit(err, 0)
  if (found) return `${REASONS[found.code] ?? found.message} [${found.code}]`
  // No code (fetch's "bad port" for 6000, 10080…): the innermost cause still says why.
  let inner = err
  for (let i = 0; i < 5 && inner instanceof Error && inner.cause instanceof Error; i++) inner = inner.cause
  const message = err instanceof Error ? err.message : String(err)
  // fetch refuses ports browsers block (1, 9, 6000, 10080…) before it connects: say it is the client's refusal.
  if (inner instanceof Error && inner.message === 'bad port') {
    return `${message}: bad port (fetch, as browsers do, never connects to this port: run the service on another one)`
  }
  return inner !== err && inner instanceof Error ? `${message}: ${inner.message}` : message
}
