import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import proxyAddr from '@fastify/proxy-addr'
import { answerAndClose } from './one-request-per-connection.js'

export interface ConnectionLimit {
  /** Connections one client address may hold open at once (0: no cap). */
  perClient: number
  /** Proxies named by TRUST_PROXY: they carry many clients' connections, so no cap applies to them. */
  trustProxy: string[] | false
}

/** Whether a peer address is one of TRUST_PROXY's proxies (which carry many clients' connections). */
export function trustedPeer (trustProxy: string[] | false): (address: string) => boolean {
  if (trustProxy === false) return () => false
  const trust = proxyAddr.compile(trustProxy)
  return (address) => trust(address, 0)
}

/**
 * A client that opens connections and sends nothing held one descriptor each until the header
 * timeout, and enough of them soon reached the open-files limit. Past `perClient` open connections
 * from one address, a new one is answered 429 and closed at once, before any request is read, and
 * `refused` is told the address.
 */
export function capConnectionsPerClient (server: Server, limit: ConnectionLimit, refused: (client: string) => void): void {
  if (limit.perClient === 0) return
  const trusted = trustedPeer(limit.trustProxy)
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress
    if (address === undefined || trusted(address)) return
    const count = (open.get(address) ?? 0) + 1
    if (count > limit.perClient) {
      answerAndClose(socket, 429, 'too-many-requests', `This client already holds ${limit.perClient} open connections; reuse them or close some`, 1)
      refused(address)
      return
    }
    open.set(address, count)
    socket.once('close', () => {
      const left = open.get(address)! - 1
      if (left === 0) open.delete(address)
      else open.set(address, left)
    })
  })
}
