// How many writes each group commit carried, per engine: kept here so the stores only count, and
// the metrics module (which reads it when scraped) stays the only one that knows Prometheus.

/** Upper bounds of the batch-size buckets (writes per commit). */
export const COMMIT_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512] as const

export interface CommitSizes { buckets: Float64Array, sum: number, count: number }

export const commitSizes: Record<'sqlite' | 'postgres', CommitSizes> = {
  sqlite: { buckets: new Float64Array(COMMIT_SIZE_BUCKETS.length), sum: 0, count: 0 },
  postgres: { buckets: new Float64Array(COMMIT_SIZE_BUCKETS.length), sum: 0, count: 0 }
}

/** Counts one commit of `writes` writes (process-wide, like the process figures). */
export function recordCommit (engine: 'sqlite' | 'postgres', writes: number): void {
  const s = commitSizes[engine]
  let i = 0
  while (i < COMMIT_SIZE_BUCKETS.length && writes > COMMIT_SIZE_BUCKETS[i]) i++
  if (i < COMMIT_SIZE_BUCKETS.length) s.buckets[i]++
  s.sum += writes
  s.count++
}
