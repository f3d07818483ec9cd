import type { Change } from './api.js'
import { byId, timing } from './dom.js'

// Changes made elsewhere, through the event stream. The browser itself reconnects after a dropped
// connection, sending Last-Event-ID; when the stream is closed for good (an error answer) the page
// reopens it from the last event seen, or starts over from a fresh list when that point is gone (410).

interface LiveEvents {
  change (change: Change): void
  /** The feed no longer reaches back to our position: reload everything and follow from the new one. */
  resync (): void
  /** The stream is back after being down (the service restarted, the network returned). */
  back (): void
}

const indicator = byId('live')
let source: EventSource | undefined
let lastSeq: string | undefined
let retry: number | undefined
let handlers: LiveEvents
/** The stream failed since it last opened: its next opening means the service is back. */
let down = false

function show (state: 'live' | 'connecting' | 'offline'): void {
  indicator.dataset.state = state
  indicator.textContent = state === 'live' ? 'Live' : state === 'connecting' ? 'Reconnecting…' : 'Offline: retrying'
}

/** Follows the feed after `position` (the list's Feed-Position); from the head when the service gives none. */
export function follow (position: string | null, events: LiveEvents): void {
  handlers = events
  down = false
  source?.close()
  window.clearTimeout(retry)
  lastSeq = position ?? undefined
  open()
}

function open (): void {
  const url = lastSeq === undefined ? '/v3/plant/events' : `/v3/plant/events?after=${encodeURIComponent(lastSeq)}`
  const es = new EventSource(url)
  source = es
  es.addEventListener('open', () => {
    show('live')
    if (!down) return
    down = false
    handlers.back()
  })
  for (const kind of ['created', 'updated', 'deleted']) {
    es.addEventListener(kind, (event) => {
      const message = event as MessageEvent<string>
      lastSeq = message.lastEventId
      handlers.change(JSON.parse(message.data) as Change)
    })
  }
  es.addEventListener('error', () => {
    down = true
    if (es.readyState === EventSource.CONNECTING) return show('connecting')
    show('offline')
    es.close()
    retry = window.setTimeout(() => { void reopen() }, timing('liveRetryMs'))
  })
}

async function reopen (): Promise<void> {
  if (lastSeq !== undefined) {
    try {
      const res = await fetch(`/v3/plant/changes?after=${encodeURIComponent(lastSeq)}&limit=1`, { cache: 'no-store' })
      if (res.status === 410) return handlers.resync()
    } catch {
      // Still unreachable: try the stream anyway, its error brings us back here.
    }
  }
  open()
}
