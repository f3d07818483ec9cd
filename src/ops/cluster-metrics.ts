import cluster from 'node:cluster'
import { AggregatorRegistry, type Registry } from 'prom-client'

// With WORKERS > 1 a scrape reaches whichever worker the primary hands the connection to; that
// worker asks the primary, which gathers every worker's registry (prom-client's AggregatorRegistry)
// and sums them, so /metrics shows the whole process group, not one worker of it.

const REQUEST = 'plants:metrics-request'
const ANSWER = 'plants:metrics-answer'
const WAIT_MS = 5_000

interface Request { type: typeof REQUEST, id: number }
interface Answer { type: typeof ANSWER, id: number, text?: string, error?: string }

/** In the primary: answers the workers' requests with the aggregate of every worker. */
export function serveClusterMetrics (): void {
  const aggregator = new AggregatorRegistry() // also listens for the workers' replies
  cluster.on('message', (worker, message: Request) => {
    if (message?.type !== REQUEST) return
    const reply = (answer: Omit<Answer, 'type' | 'id'>): void => { if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer }) }
    aggregator.clusterMetrics().then((text) => reply({ text }), (err: Error) => reply({ error: err.message }))
  })
}

/** In a worker: publishes `registry` to the primary and returns how to read the aggregate. */
export function clusterMetricsReader (registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry])
  void new AggregatorRegistry() // adds the worker's listener for the primary's collection requests
  const waiting = new Map<number, { resolve: (text: string) => void, reject: (err: Error) => void }>()
  let next = 0
  process.on('message', (message: Answer) => {
    if (message?.type !== ANSWER) return
    const w = waiting.get(message.id)
    waiting.delete(message.id)
    if (message.text !== undefined) w?.resolve(message.text)
    else w?.reject(new Error(message.error ?? 'no metrics'))
  })
  return () => new Promise<string>((resolve, reject) => {
    const id = next++
    const timer = setTimeout(() => { waiting.delete(id); reject(new Error('the primary did not answer')) }, WAIT_MS)
    waiting.set(id, {
      resolve: (text) => { clearTimeout(timer); resolve(text) },
      reject: (err) => { clearTimeout(timer); reject(err) }
    })
    process.send!({ type: REQUEST, id } satisfies Request)
  })
}
