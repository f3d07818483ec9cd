// A connected system in staff's words: how a delivery to it went, what it is told of, and why its
// address was refused. The service records a receiver's answer or why none came ("answered 500",
// "ECONNREFUSED: …", "no answer within 10000 ms"); a manager needs to know whether it arrived and,
// if not, whose side to look at.

export interface Attempt { statusCode: number | null, error: string | null }

/** "Received", or why not: a sentence fragment, starting with a capital. */
export function outcome ({ statusCode, error }: Attempt): string {
  const text = error ?? ''
  const code = statusCode ?? Number(/^answered (\d{3})/.exec(text)?.[1] ?? NaN)
  if (code >= 200 && code < 300) return 'Received'
  if (code >= 300 && code < 400) return 'Not received: the system pointed elsewhere, and the catalogue only sends to the address it was given'
  if (code === 401 || code === 403) return 'Turned away: the system did not accept the message (check the secret it was given)'
  if (code === 404 || code === 405 || code === 410) return 'Not received: nothing takes messages at that address (check it with the system’s makers)'
  if (code === 429) return 'Not received: the system was too busy and asked for less'
  if (code >= 500) return 'Not received: the system had a fault of its own'
  if (code >= 400) return 'Turned away: the system did not accept the message'
  if (/^not sent/.test(text)) return 'Not sent: that address is inside the store’s own network, which the catalogue may not reach now'
  if (/expired from the change feed|database was replaced/.test(text)) return 'It missed changes that are no longer kept, so it cannot catch up by itself'
  if (/^no answer within|TIMEOUT/i.test(text)) return 'No answer in time: the system is slow or not running'
  if (/ECONNREFUSED/.test(text)) return 'Nothing answers at that address: the system is not running there'
  if (/ENOTFOUND|EAI_AGAIN|ENODATA/.test(text)) return 'That address’s name is not known on the network'
  if (/ECONNRESET|EPIPE|UND_ERR_SOCKET|closed/i.test(text)) return 'The connection was cut before the system answered'
  if (/CERT|TLS|SSL|self.signed/i.test(text)) return 'Not sent: the system’s secure connection could not be trusted'
  if (/loopback|private|link-local|metadata/.test(text)) return 'Not sent: that address is inside the store’s own network, which the catalogue may not reach'
  return 'Not received'
}

/** The same, to follow a colon in a sentence ("Failing since …: not received, …"). */
export const outcomeInSentence = (attempt: Attempt): string => {
  const said = outcome(attempt)
  return said.charAt(0).toLowerCase() + said.slice(1)
}

export type Kind = 'created' | 'updated' | 'deleted'
export const KINDS: Array<{ value: Kind, label: string }> = [{ value: 'created', label: 'added' }, { value: 'updated', label: 'changed' }, { value: 'deleted', label: 'deleted' }]
/** What a system may also be told of: a plant's stock running low or out. */
export type StockKind = 'stock.low' | 'stock.out'
export const STOCK_KINDS: Array<{ value: StockKind, label: string }> = [{ value: 'stock.low', label: 'runs low' }, { value: 'stock.out', label: 'runs out' }]

const either = (words: string[]): string => words.length > 1 ? `${words.slice(0, -1).join(', ')} or ${words.at(-1)}` : words[0]

/** "Told when plants are added, changed or deleted", and "when a plant's stock runs low or runs out" for a system told of those. */
export function toldOf (events: Array<Kind | StockKind>): string {
  const changes = KINDS.filter((k) => events.includes(k.value)).map((k) => k.label)
  const stock = STOCK_KINDS.filter((k) => events.includes(k.value)).map((k) => k.label)
  const told = changes.length > 0 ? [`Told when plants are ${either(changes)}`] : []
  if (stock.length > 0) told.push(`${told.length > 0 ? 'and' : 'Told'} when a plant's stock ${either(stock)}`)
  return told.join(', ')
}

/** Why an address was refused, in staff's words (the service's own words name its settings). */
export function addressProblem (message: string): string {
  if (/user name or password/.test(message)) return 'Leave out the user name and password: the system checks each message with the secret it is given instead.'
  if (/must not name|resolves? to|loopback|private|link-local|metadata/.test(message)) return 'That address is inside the store’s own network: the catalogue sends there only when whoever runs it allows it.'
  if (/absolute|http/.test(message)) return 'Enter the whole address, starting with https:// (or http://).'
  return 'The catalogue cannot send to this address.'
}
