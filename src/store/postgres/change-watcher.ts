import pg from 'pg'

/**
 * Learns of commits made through any instance. LISTEN/NOTIFY on a connection of its own brings
 * them within milliseconds, at no cost while nothing is written. Notifications are lost while that
 * connection is down, so the head of the feed is also polled: the poll runs on the LISTEN
 * connection (so a connection gone silent is noticed and replaced), or on the pool while it is down.
 */
export class ChangeWatcher {
  private client: pg.Client | undefined
  private connecting = false
  private stopped = false
  private failures = 0
  private poller: NodeJS.Timeout | undefined
  private retry: NodeJS.Timeout | undefined
  private polling = false

  constructor (
    private readonly config: pg.ClientConfig,
    /** Payloads are "<schema>:<head>"; other schemas' commits on the same database are ignored. */
    private readonly schema: string,
    private readonly pollMs: number,
    private readonly readHead: () => Promise<number>,
    /** `polled`: read from the table (may be lower than before, after a restore), not a notification. */
    private readonly seen: (head: number, polled: boolean) => void
  ) {}

  start (): void {
    if (this.poller || this.stopped) return
    void this.connect()
    this.poller = setInterval(() => { void this.poll() }, this.pollMs).unref()
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearInterval(this.poller)
    clearTimeout(this.retry)
    const client = this.client
    this.client = undefined
    if (client) await endQuickly(client)
  }

  private async connect (): Promise<void> {
    if (this.connecting || this.client || this.stopped) return
    this.connecting = true
    // A query timeout on this connection is what notices a server that went silent.
    const client = new pg.Client({ ...this.config, query_timeout: Math.max(1_000, 2 * this.pollMs) })
    const lost = (): void => {
      if (this.client === client) {
        this.client = undefined
        void endQuickly(client)
        this.reconnectLater()
      }
    }
    // Registered before connect: an error on this connection must never reach the process.
    client.on('error', lost)
    client.on('end', lost)
    client.on('notification', (n) => {
      const [schema, head] = (n.payload ?? '').split(':')
      if (schema === this.schema) this.seen(Number(head), false)
    })
    try {
      await client.connect()
      await client.query('LISTEN plant_changes')
      if (this.stopped) { await endQuickly(client); return }
      this.client = client
      this.failures = 0
      void this.poll() // whatever was committed while we were not listening
    } catch {
      void endQuickly(client)
      this.reconnectLater()
    } finally {
      this.connecting = false
    }
  }

  private reconnectLater (): void {
    if (this.stopped || this.retry) return
    const delay = Math.min(5_000, 250 * 2 ** this.failures++)
    this.retry = setTimeout(() => { this.retry = undefined; void this.connect() }, delay)
    this.retry.unref()
  }

  private async poll (): Promise<void> {
    if (this.polling || this.stopped) return
    this.polling = true
    const client = this.client
    try {
      if (client) {
        const { rows } = await client.query<{ value: number }>("SELECT value FROM meta WHERE key = 'feed_head'")
        this.seen(rows[0].value, true)
      } else {
        this.seen(await this.readHead(), true)
      }
    } catch {
      if (client && this.client === client) {
        // Silent or broken: replace it, or notifications may have stopped without a word.
        this.client = undefined
        void endQuickly(client)
        this.reconnectLater()
      }
    } finally {
      this.polling = false
    }
  }
}

/** end() waits for the server's goodbye, which a frozen server never sends. */
async function endQuickly (client: pg.Client): Promise<void> {
  await Promise.race([client.end().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1_000).unref())])
  const socket = (client as unknown as { connection?: { stream?: { destroy (): void } } }).connection?.stream
  socket?.destroy()
}
