import { createServer } from 'node:net'

/** A TCP port free on 127.0.0.1 just now, for a service the bench starts. */
export async function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const address = s.address()
      s.close(() => { typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')) })
    })
  })
}
