import cluster, { type Worker } from 'node:cluster'
import { AggregatorRegistry, Gauge, type MetricObjectWithValues, type MetricValue, type Registry, type RegistryContentType } from 'prom-client'

// With WORKERS > 1 a scrape reaches whichever worker the primary hands the connection to; that
// worker asks the primary, which asks every listening worker for its figures and sums those that
// answer within WORKER_WAIT_MS (prom-client's AggregatorRegistry.aggregate). A worker that does
// not answer in time (its event loop held by a long task, or stopped) is left out and counted by
// `cluster_workers_unanswered`: the scrape still answers 200, in bounded time, with what it has.
// prom-client's own clusterMetrics() is not used: it fails the whole scrape when one worker is late,
// and it asks workers still starting, which have no listener yet and never answer.

type Figures = Array<MetricObjectWithValues<MetricValue<string>>>

/** How long the primary waits for each worker's figures. A worker answers an idle turn in a few ms. */
export const WORKER_WAIT_MS = 2_000
/** How long a worker waits for the primary's sum (which itself waits at most WORKER_WAIT_MS). */
const PRIMARY_WAIT_MS = WORKER_WAIT_MS + 2_000

const REQUEST = 'plants:metrics-request' // worker → primary: the sum, please
const ANSWER = 'plants:metrics-answer' // primary → worker: the sum
const ASK = 'plants:metrics-ask' // primary → every worker: your figures, please
const FIGURES = 'plants:metrics-figures' // worker → primary: my figures

interface Request { type: typeof REQUEST, id: number }
interface Answer { type: typeof ANSWER, id: number, text: string, unanswered: number[] }
interface Ask { type: typeof ASK, id: number }
interface FiguresMessage { type: typeof FIGURES, id: number, figures?: Figures, error?: string }

/** Prometheus text without the blank lines prom-client puts between metrics. */
export function exposition (text: string): string {
  return text.replace(/\n{2,}/g, '\n')
}

/** The scrape's own health: how many workers it sums and how many it had to leave out. */
function coverage (registry: Registry<RegistryContentType>, summed: number, unanswered: number): void {
  new Gauge({
    name: 'cluster_workers_summed',
    help: 'Workers whose figures this scrape sums (listening workers that answered in time)',
    registers: [registry]
  }).set(summed)
  new Gauge({
    name: 'cluster_workers_unanswered',
    help: `Listening workers left out of this scrape: no figures within ${WORKER_WAIT_MS} ms (a busy or stuck event loop); NaN when the primary itself did not answer and the figures are one worker's`,
    registers: [registry]
  }).set(unanswered)
}

/** In the primary: answers the workers' requests with the sum of every listening worker's figures. */
export function serveClusterMetrics (): void {
  // Only a worker that listens has built its app, and with it the listener for ASK; one still
  // starting would drop the message, and it has served nothing yet.
  const listening = new Set<Worker>()
  cluster.on('listening', (worker) => { listening.add(worker) })
  cluster.on('exit', (worker) => { listening.delete(worker) })
  const gathering = new Map<number, (worker: Worker, message: FiguresMessage) => void>()
  let next = 0

  const gather = async (): Promise<{ text: string, unanswered: number[] }> => {
    const asked = [...listening].filter((w) => w.isConnected())
    const id = next++
    const figures = new Map<Worker, Figures>()
    const heard = new Set<Worker>()
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, WORKER_WAIT_MS)
      gathering.set(id, (worker, message) => {
        heard.add(worker)
        if (message.figures !== undefined) figures.set(worker, message.figures)
        if (heard.size >= asked.length) { clearTimeout(timer); resolve() }
      })
      for (const w of asked) w.send({ type: ASK, id } satisfies Ask)
      if (asked.length === 0) { clearTimeout(timer); resolve() }
    })
    gathering.delete(id) // figures arriving later are dropped
    const registry = AggregatorRegistry.aggregate([...figures.values()])
    const unanswered = asked.filter((w) => !figures.has(w)).map((w) => w.process.pid ?? 0)
    coverage(registry, figures.size, unanswered.length)
    return { text: exposition(await registry.metrics()), unanswered }
  }

  cluster.on('message', (worker, message: Request | FiguresMessage) => {
    if (message?.type === FIGURES) gathering.get(message.id)?.(worker, message)
    if (message?.type !== REQUEST) return
    void gather().then(({ text, unanswered }) => {
      if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, text, unanswered } satisfies Answer)
    })
  })
}

/** Where a worker logs that a scrape left workers out (its own logger: one line in the service's log). */
export interface MetricsLog { warn (details: object, message: string): void }

/** In a worker: answers the primary's ASK with `registry`'s figures, and returns how to read the sum. */
export function clusterMetricsReader (registry: Registry, log: MetricsLog): () => Promise<string> {
  const waiting = new Map<number, (answer: Answer | undefined) => void>()
  let next = 0
  process.on('message', (message: Answer | Ask) => {
    if (message?.type === ASK) {
      const reply = (m: Omit<FiguresMessage, 'type' | 'id'>): void => { if (process.connected) process.send!({ type: FIGURES, id: message.id, ...m }) }
      registry.getMetricsAsJSON().then((figures) => reply({ figures }), (err: Error) => reply({ error: err.message }))
    } else if (message?.type === ANSWER) {
      waiting.get(message.id)?.(message)
    }
  })
  /** This worker's figures alone, said to be so: the primary did not answer (it should never happen). */
  const own = async (): Promise<string> => {
    const alone = AggregatorRegistry.aggregate([await registry.getMetricsAsJSON()])
    coverage(alone, 1, Number.NaN)
    log.warn({ waitedMs: PRIMARY_WAIT_MS }, 'metrics: the primary did not answer; this scrape holds this worker\'s figures alone')
    return exposition(await alone.metrics())
  }
  return async () => {
    if (!process.connected) return own()
    const id = next++
    const answer = await new Promise<Answer | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), PRIMARY_WAIT_MS)
      waiting.set(id, (a) => { clearTimeout(timer); resolve(a) })
      process.send!({ type: REQUEST, id } satisfies Request)
    })
    waiting.delete(id)
    if (answer === undefined) return own()
    if (answer.unanswered.length > 0) {
      log.warn({ unansweredWorkers: answer.unanswered, waitedMs: WORKER_WAIT_MS },
        `metrics: ${answer.unanswered.length} worker(s) did not answer within ${WORKER_WAIT_MS} ms; this scrape sums the others (cluster_workers_unanswered)`)
    }
    return answer.text
  }
}
