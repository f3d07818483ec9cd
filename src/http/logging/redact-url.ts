/**
 * Query parameters whose values are credentials: `api_key` (the Petstore's name), and any name that
 * is or ends in key, token, secret, password or signature (`apikey`, `access_token`, `X-Amz-Signature`).
 * The service reads keys only from headers, but a client that puts one in the URL must not see it
 * in the logs.
 */
const SECRET_NAME = /(?:^|[_.-])(?:api_?key|key|token|secret|password|passwd|pwd|signature|sig|auth|authorization|credentials?)$|^apikey$/i

/** The URL as logged: the value of every key-like query parameter replaced. */
export function redactUrl (url: unknown): unknown {
  if (typeof url !== 'string') return url
  const q = url.indexOf('?')
  if (q < 0) return url
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=')
    const name = eq < 0 ? pair : pair.slice(0, eq)
    return SECRET_NAME.test(decodeName(name)) ? `${name}=[redacted]` : pair
  })
  return `${url.slice(0, q)}?${query.join('&')}`
}

function decodeName (name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '))
  } catch {
    return name
  }
}

interface LoggedRequest { method?: string, url?: string, host?: string, ip?: string, socket?: { remotePort?: number } }

/** Fastify's own `req` serializer (the same members), with the URL redacted. */
export function redactedRequest (req: LoggedRequest): Record<string, unknown> {
  return { method: req.method, url: redactUrl(req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort }
}
