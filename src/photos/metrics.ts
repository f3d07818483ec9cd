import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { ImageQueue } from './image-queue.js'

export type UploadRefusal = 'unsupported-type' | 'too-large' | 'busy' | 'invalid'

/** The photo figures on /metrics: processing time, refusals by reason, the queue's depth. */
export class PhotoMetrics {
  private readonly seconds: Histogram
  private readonly refusals: Counter<'reason'>
  private queues: ImageQueue[] = []

  constructor (registry?: Registry) {
    const registers = registry ? [registry] : []
    this.seconds = new Histogram({
      name: 'photo_processing_seconds',
      help: 'Time to check a picture and make its three files (waiting in the queue included)',
      buckets: [0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 5, 10],
      registers
    })
    this.refusals = new Counter({ name: 'photo_uploads_refused_total', help: 'Uploads refused before storing, by reason', labelNames: ['reason'], registers })
    const queues = (): ImageQueue[] => this.queues
    // eslint-disable-next-line no-new -- registered, and read through collect() when scraped
    new Gauge({
      name: 'photo_queue',
      help: 'Uploads admitted (processing or waiting, bodies held in memory) and pictures being processed',
      labelNames: ['state'],
      registers,
      collect () {
        this.set({ state: 'admitted' }, queues().reduce((n, q) => n + q.depth, 0))
        this.set({ state: 'processing' }, queues().reduce((n, q) => n + q.processing, 0))
      }
    })
  }

  watch (queue: ImageQueue): void { this.queues.push(queue) }
  processed (seconds: number): void { this.seconds.observe(seconds) }
  refused (reason: UploadRefusal): void { this.refusals.inc({ reason }) }
}
