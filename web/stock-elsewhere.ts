import { api, type MovementResult, type StockLevels } from './api.js'

// Sell one for a plant whose main place has none (the sale there met 409 insufficient-stock),
// fetched only then: a store that sells from one place never needs it. The row knows only the
// plant's totals, and staff selling a pot hold it in their hand: with exactly one place holding
// units, it came from there and is sold there; with several the page cannot tell which, sells
// nothing, and sends staff to the plant's Stock part, which sells one at a place they choose.

type Move = (id: number, delta: number, reason: 'sale', where: string) => Promise<MovementResult>

/** A refusal in staff's words: Sell one shows its message as it is. */
const said = (text: string): Error => Object.assign(new Error(text), { said: true })

export async function sellElsewhere (id: number, name: string, move: Move): Promise<{ answer: MovementResult, where: string }> {
  const places = (await api<StockLevels>('GET', `/v3/plant/${id}/stock`)).body.items.filter((l) => l.available > 0).map((l) => l.location)
  // Received at main meanwhile: sold there after all.
  const where = places.includes('main') ? 'main' : places.length === 1 ? places[0]! : undefined
  if (where !== undefined) return { answer: await move(id, -1, 'sale', where), where }
  throw said(places.length === 0
    ? `“${name}” was not sold: none is available now (sold or held by a web shop's checkout meanwhile).`
    : `“${name}” was not sold: main has none, and ${places.join(' and ')} have some, so the page cannot tell which place it came from. Open the plant and sell it from its place.`)
}
