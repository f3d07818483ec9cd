import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'

// A webhook receiver on loopback (node:http): it records every request and answers as the test says.

export interface Received { headers: IncomingHttpHeaders, body: string }
/**
 * ok: 204; fail: 500; redirect: 302 to another path; close: the socket is destroyed; hang: never
 * answers; hold: answers 204 once the test calls release(), and at once after that (a slow receiver
 * whose slowness the test decides, rather than a clock).
 */
export type Answer = 'ok' | 'fail' | 'redirect' | 'close' | 'hang' | 'hold'

export interface Receiver {
  url: string
  received: Received[]
  /** How the next requests are answered, in turn; once used up, `then`. */
  answers: Answer[]
  then: Answer
  /** Requests answered so far (a held one counts once it is released). */
  answered: number
  /** Answers every held request with 204; `hold` answers at once from then on. */
  release: () => void
}

export async function receiver (t: TestContext, then: Answer = 'ok'): Promise<Receiver> {
  const sockets = new Set<Socket>()
  const held: Array<() => void> = []
  let released = false
  const r: Receiver = {
    url: '',
    received: [],
    answers: [],
    then,
    answered: 0,
    release: () => {
      released = true
      for (const answer of held.splice(0)) answer()
    }
  }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      r.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() })
      const answer = r.answers.shift() ?? r.then
      if (answer !== 'hang' && answer !== 'close') res.on('finish', () => { r.answered++ })
      if (answer === 'ok') res.writeHead(204).end()
      else if (answer === 'hold') {
        if (released) res.writeHead(204).end()
        else held.push(() => res.writeHead(204).end())
      } else if (answer === 'fail') res.writeHead(500).end('no')
      else if (answer === 'redirect') res.writeHead(302, { location: '/elsewhere' }).end()
      else if (answer === 'close') req.socket.destroy()
      // hang: nothing, until the test ends
    })
  })
  server.on('connection', (s: Socket) => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  t.after(async () => {
    for (const s of sockets) s.destroy()
    await new Promise((resolve) => server.close(resolve))
  })
  return r
}

/** Waits until `check` holds (polling); fails with `what` if it never does within a minute. */
export async function until (what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const give = Date.now() + 60_000
  while (!await check()) {
    if (Date.now() > give) throw new Error(`never happened: ${what}`)
    await sleep(10)
  }
}
