import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import { WebhookClient } from '../../src/webhooks/client.js'
import { targetProblem } from '../../src/webhooks/target.js'
import { addressProblem, outcome, outcomeInSentence, toldOf } from '../../web/admin-outcome.js'

// The staff page says how a delivery to a connected system went, and why an address was refused,
// in staff's words (web/admin-outcome.ts). The outcomes and refusals here are the service's own,
// made by its webhook client against real receivers and by its address check, so a change in how
// the service words them is caught here.

/** The service's webhook client, closed when the test ends. */
function clientFor (t: TestContext, options: { allowPrivate?: boolean, timeoutMs?: number } = {}): WebhookClient {
  const client = new WebhookClient({ allowPrivate: options.allowPrivate ?? true, timeoutMs: options.timeoutMs ?? 10_000 })
  t.after(() => client.close())
  return client
}

/** A loopback receiver answering every request with `status` (0: closing the connection unanswered; -1: never answering). */
async function answering (t: TestContext, status: number): Promise<string> {
  const server = createServer((req, res) => {
    req.resume()
    if (status === 0) req.socket.destroy()
    else if (status > 0) res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {}).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    server.closeAllConnections()
    return new Promise((resolve) => server.close(resolve))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
}

test('each answer a receiver gives is said in words, never as a status code', async (t) => {
  const client = clientFor(t)
  const said = async (status: number) => outcome(await client.post(await answering(t, status), '{}', []))
  const words: Record<number, string> = {
    204: 'Received',
    500: 'Not received: the system had a fault of its own',
    503: 'Not received: the system had a fault of its own',
    401: 'Turned away: the system did not accept the message (check the secret it was given)',
    404: 'Not received: nothing takes messages at that address (check it with the system’s makers)',
    429: 'Not received: the system was too busy and asked for less',
    422: 'Turned away: the system did not accept the message',
    302: 'Not received: the system pointed elsewhere, and the catalogue only sends to the address it was given',
    0: 'The connection was cut before the system answered'
  }
  for (const [status, expected] of Object.entries(words)) {
    const answer = await said(Number(status))
    assert.equal(answer, expected, `answered ${status}`)
    assert.doesNotMatch(answer, /\d/)
  }
})

test('no answer in time, nothing listening, or an address not allowed, is said as such', async (t) => {
  // An attempt's time limit, shortened: the receiver never answers, so the limit is what ends it.
  const hanging = await answering(t, -1)
  assert.equal(outcome(await clientFor(t, { timeoutMs: 100 }).post(hanging, '{}', [])), 'No answer in time: the system is slow or not running')

  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const free = (server.address() as AddressInfo).port
  await new Promise((resolve) => server.close(resolve))
  assert.equal(outcome(await clientFor(t).post(`http://127.0.0.1:${free}/hook`, '{}', [])), 'Nothing answers at that address: the system is not running there')

  const refused = await clientFor(t, { allowPrivate: false }).post('http://127.0.0.1:9/hook', '{}', [])
  assert.match(String(refused.error), /^not sent/)
  assert.equal(outcome(refused), 'Not sent: that address is inside the store’s own network, which the catalogue may not reach now')
})

test('a failing webhook\'s stored last error reads the same as the attempt it came from', () => {
  // A webhook keeps only its lastError ("answered 500"): the code is read back out of it.
  assert.equal(outcome({ statusCode: null, error: 'answered 500' }), 'Not received: the system had a fault of its own')
  assert.equal(outcomeInSentence({ statusCode: null, error: 'answered 500' }), 'not received: the system had a fault of its own')
  assert.equal(outcome({ statusCode: null, error: 'answered 302: redirects are not followed' }),
    'Not received: the system pointed elsewhere, and the catalogue only sends to the address it was given')
  assert.equal(outcome({ statusCode: null, error: 'the changes after 41 have expired from the change feed (or the database was replaced)' }),
    'It missed changes that are no longer kept, so it cannot catch up by itself')
})

test('an address the service refuses is said in words, from the service\'s own refusal', () => {
  const said = (url: string) => addressProblem(targetProblem(url, false) ?? 'accepted')
  assert.equal(said('https://user:pass@shop.example/hooks'), 'Leave out the user name and password: the system checks each message with the secret it is given instead.')
  assert.equal(said('http://127.0.0.1:8080/hooks'), 'That address is inside the store’s own network: the catalogue sends there only when whoever runs it allows it.')
  assert.equal(said('http://localhost/hooks'), 'That address is inside the store’s own network: the catalogue sends there only when whoever runs it allows it.')
  assert.equal(said('ftp://shop.example/hooks'), 'Enter the whole address, starting with https:// (or http://).')
  assert.equal(said('shop.example/hooks'), 'Enter the whole address, starting with https:// (or http://).')
})

test('what a system is told of is named in words', () => {
  assert.equal(toldOf(['created', 'updated', 'deleted']), 'Told when plants are added, changed or deleted')
  assert.equal(toldOf(['deleted', 'created']), 'Told when plants are added or deleted')
  assert.equal(toldOf(['updated']), 'Told when plants are changed')
  // A system told of stock (added through the API or the command line) is said so, not "Told when plants are undefined".
  assert.equal(toldOf(['stock.low', 'stock.out']), 'Told when a plant\'s stock runs low or runs out')
  assert.equal(toldOf(['updated', 'stock.out']), 'Told when plants are changed, and when a plant\'s stock runs out')
})
