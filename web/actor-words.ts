// Who made a change, as staff read it after the time ("… by till-3"): the key's name. A key set up
// where the catalogue runs, given no name there, is only `env-1`, `env-2`… to the service, a name
// no one at the shop gave it, so it is said for what it is; the command line likewise.

/** " by till-3", " with a key set up where the catalogue runs", " from the command line"; nothing without a key. */
export function byWhom (actor: string | null): string {
  if (actor === null || actor === 'anonymous' || actor === '') return ''
  if (actor === 'cli') return ' from the command line'
  if (/^env-\d+$/.test(actor)) return ' with a key set up where the catalogue runs'
  return ` by ${actor}`
}
