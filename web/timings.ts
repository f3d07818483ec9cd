// How long the page waits before it acts, in milliseconds: each default is what a person at the
// till needs. The page never changes them. A test may, to wait less (test/helpers/staff-page.ts):
// it sets `window.plantsTimings` before the page's scripts run, and may change it on an open page,
// since each wait is read when it starts.

const DEFAULTS = {
  /** After a key, an empty list waits this long for the next key (a person's comes sooner) before "No plant matches". */
  holdEmptyMs: 500,
  /** Changes made here or elsewhere come in bursts: the rows on screen are read again once they pause this long. */
  refreshMs: 150,
  /** A closed select changes at each arrow key: the list follows once the choice rests this long. */
  settleMs: 400,
  /** The live feed, dropped, is opened again after this long. */
  liveRetryMs: 2000,
  /** A read refused as busy (429, 503) is asked again after its Retry-After (at most 10, else 1) times this long, doubled at each try. */
  retryMs: 1000
}

export type Timings = typeof DEFAULTS

/** The wait `name`, as a test set it (a number, 0 or more), else its default. */
export function timing (name: keyof Timings): number {
  const asked = (window as Window & { plantsTimings?: Partial<Timings> }).plantsTimings?.[name]
  return typeof asked === 'number' && Number.isFinite(asked) && asked >= 0 ? asked : DEFAULTS[name]
}
