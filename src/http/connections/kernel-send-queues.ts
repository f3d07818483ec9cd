import { readFile } from 'node:fs/promises'

// Where Linux lists this network namespace's TCP sockets, one a line, with the bytes each has sent
// and not yet had acknowledged by its peer (`tx_queue`): what the kernel holds for a client that
// does not read, which Node.js itself cannot see once a write has been taken. Each file walks
// every socket of the host's table whatever it shows, which costs milliseconds on a busy host, so
// only the families asked for are read, and off the event loop.
const TABLES = { IPv4: '/proc/net/tcp', IPv6: '/proc/net/tcp6' }

export type Family = keyof typeof TABLES

/** The key of a connection in readSendQueues' answer: its local and remote ports. */
export const connectionKey = (localPort: number | undefined, remotePort: number | undefined): string => `${localPort}:${remotePort}`

/**
 * The kernel's unacknowledged send bytes of the TCP connections of `families`, by connectionKey
 * (absent: none); undefined where the kernel does not say (not Linux). Two connections with the
 * same ports (clients of two addresses that chose the same port) count as the larger of the two:
 * the account errs high.
 */
export async function readSendQueues (families: Iterable<Family>): Promise<Map<string, number> | undefined> {
  const queues = new Map<string, number>()
  let read = false
  for (const family of new Set(families)) {
    if (!(family in TABLES)) continue
    let text: string
    try {
      text = await readFile(TABLES[family], 'latin1')
    } catch (err) {
      // Absent: not Linux (or no IPv6). Anything else (out of descriptors) is this look's failure alone.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw err
    }
    read = true
    // "sl local_address rem_address st tx_queue:rx_queue …", addresses as HEX:PORT.
    for (const line of text.split('\n').slice(1)) {
      const columns = line.trim().split(/\s+/)
      if (columns.length < 5) continue
      const bytes = Number.parseInt(columns[4].slice(0, columns[4].indexOf(':')), 16)
      if (!(bytes > 0)) continue
      const local = Number.parseInt(columns[1].slice(columns[1].lastIndexOf(':') + 1), 16)
      const remote = Number.parseInt(columns[2].slice(columns[2].lastIndexOf(':') + 1), 16)
      const key = connectionKey(local, remote)
      if (bytes > (queues.get(key) ?? 0)) queues.set(key, bytes)
    }
  }
  return read ? queues : undefined
}
