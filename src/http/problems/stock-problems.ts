import { stockRefusalOf } from '../../catalogue/stock.js'
import { HttpProblem, type PlaceAvailable } from './problem.js'

// Stock's refusals (catalogue/stock.ts) as the contract's problems, for the one error handler.

/** The problem a stock error is answered with, or undefined for any other error. */
export function stockProblem (error: unknown): HttpProblem | undefined {
  const refusal = stockRefusalOf(error)
  if (refusal === undefined) return undefined
  switch (refusal.error) {
    case 'insufficient-stock': {
      // Units held by reservations (web checkouts) are on the shelf but spoken for: a count or a
      // movement may not take them, and the refusal says so, and how they are let go.
      const held = refusal.reserved > 0
        ? ` (${refusal.reserved} more held there by reservations until each is committed, released or expires)`
        : ''
      const detail = refusal.untracked
        ? 'the plant does not track stock: receive or count its stock first (reason received, or set with count): nothing was applied'
        : `only ${refusal.available} available at ${refusal.location}${held}${elsewhere(refusal.elsewhere)}: nothing was applied`
      const problem = new HttpProblem(409, 'insufficient-stock', detail)
      problem.available = refusal.available
      problem.location = refusal.location
      if (!refusal.untracked) problem.elsewhere = places(refusal.elsewhere)
      return problem
    }
    case 'stock-changed': {
      const problem = new HttpProblem(409, 'stock-changed', `the count at ${refusal.location} is ${refusal.onHand}, not the expected one: nothing was applied; count again from it`,
        [{ path: '/expected', message: `is not the current count (${refusal.onHand})` }])
      problem.onHand = refusal.onHand
      problem.location = refusal.location
      return problem
    }
    case 'stock-held':
      return new HttpProblem(409, 'stock-held', `the plant holds ${refusal.onHand} on hand and ${refusal.reserved} reserved: move them out first`)
    case 'location-not-found':
      return new HttpProblem(404, 'location-not-found', `no location named ${refusal.location}`, [{ path: '/location', message: 'is not a location (GET /v3/locations)' }])
    case 'location-name-taken':
      return new HttpProblem(409, 'location-name-taken', `a location named ${refusal.location} exists`, [{ path: '/name', message: 'is taken' }])
    case 'location-not-empty':
      return new HttpProblem(409, 'location-not-empty', `location ${refusal.location} holds stock: move it out first`)
    case 'reservation-short': {
      const lines = refusal.lines.map((l) => ({
        path: `/lines/${l.index}`, plant: l.plant, location: l.location, quantity: l.quantity, available: l.available, ...(l.untracked === true ? {} : { elsewhere: places(l.elsewhere) })
      }))
      const untracked = [...new Set(refusal.lines.filter((l) => l.untracked === true).map((l) => l.plant))]
      const why = untracked.length === 0 ? '' : ` (${untracked.length === 1 ? 'plant' : 'plants'} ${untracked.join(', ')} ${untracked.length === 1 ? 'does' : 'do'} not track stock: receive or count its stock first)`
      const problem = new HttpProblem(409, 'insufficient-stock', `${lines.length} line(s) cannot be held${why}: nothing was held`,
        refusal.lines.map((l) => ({
          path: `/lines/${l.index}`,
          message: l.untracked === true
            ? `plant ${l.plant} does not track stock: receive or count its stock first (POST /v3/plant/${l.plant}/stock/movements)`
            : `plant ${l.plant} has ${l.available} available at ${l.location} (the lines of one plant and location count together)${elsewhere(l.elsewhere)}`
        })))
      problem.lines = lines
      return problem
    }
    case 'reservation-line-unknown':
      return refusal.what === 'plant'
        ? new HttpProblem(404, 'not-found', 'a line names a plant that is not in the catalogue (unknown, or in the trash): nothing was applied', refusal.indexes.map((i) => ({ path: `/lines/${i}/plant`, message: 'is not a plant of the catalogue (unknown, or in the trash)' })))
        : new HttpProblem(404, 'location-not-found', 'a line names a location that does not exist: nothing was applied', refusal.indexes.map((i) => ({ path: `/lines/${i}/location`, message: 'is not a location (GET /v3/locations)' })))
    case 'reservation-not-found':
      return new HttpProblem(404, 'reservation-not-found', `no reservation ${refusal.id}`)
    case 'reservation-gone': {
      const problem = new HttpProblem(410, 'reservation-gone', `the reservation is ${refusal.state}: nothing was applied`)
      problem.state = refusal.state
      return problem
    }
    case 'movement-invalid':
      return new HttpProblem(400, 'invalid-input', refusal.message, [{ path: '/delta', message: refusal.message }])
  }
}

/** The other places as the problem names them (a level read carries more than a client needs here). */
const places = (levels: Array<{ location: string, available: number }> | undefined): PlaceAvailable[] =>
  (levels ?? []).map(({ location, available }) => ({ location, available }))

/** " (available elsewhere: 8 at greenhouse; name the place as location)", or nothing when no other place has units. */
const elsewhere = (places: Array<{ location: string, available: number }> | undefined): string =>
  places === undefined || places.length === 0
    ? ''
    : ` (available elsewhere: ${places.map((l) => `${l.available} at ${l.location}`).join(', ')}; name the place as location)`
