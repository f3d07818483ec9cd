// The history operations and the preloaded plant each reads: shared by the load generator,
// which sends the requests, and the history phase, which gives plant 2 its versions.

/** The preloaded plant each operation reads: plant 1 keeps its one version, plant 2 is given 999 more. */
export const HISTORY_PLANTS = { 'history-1': 1, 'history-1000': 2 } as const
