import http from 'node:http'

export interface SseEvent { id: number, event: string, data: any }

/** A minimal Server-Sent Events client that keeps every event it receives. */
export class SseClient {
  readonly events: SseEvent[] = []
  status = 0
  /** The last `id:` received, with or without data (a stream names where it starts with a bare id). */
  lastEventId: number | undefined
  /** The response headers. */
  headers: http.IncomingHttpHeaders = {}
  private req?: http.ClientRequest
  private res?: http.IncomingMessage
  private waiters: Array<() => void> = []

  static async connect (url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const client = new SseClient()
    await client.open(url, headers)
    return client
  }

  private open (url: string, headers: Record<string, string>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        this.res = res
        this.status = res.statusCode ?? 0
        this.headers = res.headers
        let buffer = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          buffer += chunk
          let end
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            this.parse(buffer.slice(0, end))
            buffer = buffer.slice(end + 2)
          }
        })
        res.on('error', () => {})
        resolve()
      })
      this.req.on('error', reject)
    })
  }

  private parse (block: string): void {
    const fields: Record<string, string> = {}
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue
      const i = line.indexOf(':')
      if (i > 0) fields[line.slice(0, i)] = line.slice(i + 1).trimStart()
    }
    if (fields.id !== undefined) this.lastEventId = Number(fields.id)
    for (const wake of this.waiters.splice(0)) wake()
    if (fields.data === undefined) return
    this.events.push({ id: Number(fields.id), event: fields.event, data: JSON.parse(fields.data) })
    for (const wake of this.waiters.splice(0)) wake()
  }

  /** Stops reading without closing: the server sees a slow client. */
  pause (): void { this.res?.pause() }
  resume (): void { this.res?.resume() }

  async waitFor (predicate: () => boolean, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for events (have ${this.events.length})`)
      await new Promise<void>((resolve) => { this.waiters.push(resolve); setTimeout(resolve, 50) })
    }
  }

  close (): void { this.req?.destroy() }
}
