import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { send, startService, tempDir, type ServiceProcess } from '../helpers/process.js'

// kill -9 under sales: tills sell one pot at a time (each sale with its own Idempotency-Key) at a
// plant with plenty of stock, and the service is killed mid-flight. After a restart every
// acknowledged sale is in the ledger exactly once; the tills retry the ones they were not answered
// with the same keys, and each is then in the ledger once (a sale that had committed is answered
// from its key, not sold again); the levels are the ledger's sum and the record's stock the levels'.

const TILLS = 8
const STOCK = 1_000_000

interface Till { acknowledged: string[], unanswered: string[] }

const sale = (url: string, id: number, key: string) => send(url, {
  method: 'POST',
  path: `/v3/plant/${id}/stock/movements`,
  body: { delta: -1, reason: 'sale', reference: key },
  headers: { 'idempotency-key': key }
})

/** The plant's whole ledger, oldest first. */
async function ledger (url: string, id: number): Promise<Array<{ delta: number, reference: string | null }>> {
  const all: Array<{ delta: number, reference: string | null }> = []
  for (let cursor: string | null = ''; cursor !== null;) {
    const page = await send(url, { method: 'GET', path: `/v3/plant/${id}/stock/movements?limit=100${cursor === '' ? '' : `&cursor=${cursor}`}` })
    assert.equal(page.status, 200, page.body)
    all.push(...page.json().items)
    cursor = page.json().nextCursor
  }
  return all.reverse()
}

/** A plant with plenty of stock on a running service. */
async function stockedPlant (url: string): Promise<number> {
  const made = await send(url, { method: 'POST', path: '/v3/plant', body: { name: 'Pothos' } })
  assert.equal(made.status, 200, made.body)
  const id: number = made.json().id
  const received = await send(url, { method: 'POST', path: `/v3/plant/${id}/stock/movements`, body: { delta: STOCK, reason: 'received' } })
  assert.equal(received.status, 201, received.body)
  return id
}

/**
 * A till selling at `url` until `stop()`: each sale's key goes to acknowledged (201) or unanswered
 * (no answer: the connection cut by the kill, or refused; or 503, the storage's documented answer
 * when it does not commit in time). Any other answer fails the test.
 */
async function till (name: string, url: () => string, id: number, stop: () => boolean, into: Till, fail: (why: string) => void): Promise<void> {
  for (let k = 0; !stop(); k++) {
    const key = `${name}-${k}`
    const answer = await sale(url(), id, key).catch(() => undefined)
    if (answer?.status === 201) into.acknowledged.push(key)
    else if (answer === undefined || answer.status === 503) into.unanswered.push(key)
    else { fail(`sale ${key}: ${answer.status} ${answer.body}`); return }
  }
}

/** What the ledger, the levels and the record say after the tills have retried: the checks every variant shares. */
async function audit (t: TestContext, url: string, id: number, tills: Till[]): Promise<void> {
  const acknowledged = tills.flatMap((x) => x.acknowledged)
  const unanswered = tills.flatMap((x) => x.unanswered)
  const before = await ledger(url, id)
  const times = (rows: typeof before): Map<string, number> => {
    const counts = new Map<string, number>()
    for (const row of rows) if (row.reference !== null) counts.set(row.reference, (counts.get(row.reference) ?? 0) + 1)
    return counts
  }
  const seen = times(before)
  for (const key of acknowledged) assert.equal(seen.get(key), 1, `acknowledged sale ${key} is in the ledger once`)
  const committedUnanswered = unanswered.filter((key) => seen.has(key)).length
  // The tills retry what they were not answered, with the same keys: each applies at most once.
  let replayed = 0
  for (const key of unanswered) {
    const answer = await sale(url, id, key)
    assert.equal(answer.status, 201, `retry of ${key}: ${answer.body}`)
    if (answer.headers['idempotent-replayed'] === 'true') replayed++
  }
  // So does a retry of an acknowledged one (a till that lost the answer after all).
  for (const key of acknowledged.slice(0, 5)) {
    const answer = await sale(url, id, key)
    assert.equal(answer.status, 201)
    assert.equal(answer.headers['idempotent-replayed'], 'true', `retry of acknowledged ${key} is answered from its key`)
  }
  assert.equal(replayed, committedUnanswered, 'an unanswered sale that had committed is answered from its key, not sold again')
  const after = await ledger(url, id)
  const counts = times(after)
  for (const key of [...acknowledged, ...unanswered]) assert.equal(counts.get(key), 1, `sale ${key} is in the ledger once after the retries`)
  assert.equal(after.length, 1 + acknowledged.length + unanswered.length, 'nothing else was sold')
  const sum = after.reduce((n, row) => n + row.delta, 0)
  const levels = await send(url, { method: 'GET', path: `/v3/plant/${id}/stock` })
  assert.deepEqual(levels.json().items, [{ location: 'main', onHand: sum, reserved: 0, available: sum }], 'the level is the ledger\'s sum')
  const record = await send(url, { method: 'GET', path: `/v3/plant/${id}` })
  assert.deepEqual(record.json().stock, { onHand: sum, reserved: 0, available: sum }, 'the record\'s stock is the levels\'')
  assert.equal(sum, STOCK - acknowledged.length - unanswered.length)
  t.diagnostic(`${acknowledged.length} sales acknowledged, ${unanswered.length} unanswered (${committedUnanswered} of them had committed and were answered from their key on retry)`)
}

async function killUnderSales (t: TestContext, start: () => Promise<ServiceProcess>): Promise<void> {
  const service = await start()
  const id = await stockedPlant(service.url)
  const tills: Till[] = Array.from({ length: TILLS }, () => ({ acknowledged: [], unanswered: [] }))
  let killed = false
  let failure: string | undefined
  const fail = (why: string): void => { failure ??= why; killed = true; service.child.kill('SIGKILL') }
  const killer = (async () => {
    // Mid-flight: once a few hundred sales are acknowledged, with every till sending.
    while (!killed && tills.reduce((n, x) => n + x.acknowledged.length, 0) < 300) await new Promise((resolve) => setTimeout(resolve, 5))
    killed = true
    service.child.kill('SIGKILL')
  })()
  await Promise.all([...tills.map((x, i) => till(`till${i}`, () => service.url, id, () => killed, x, fail)), killer])
  assert.equal(failure, undefined)
  assert.equal((await service.exited).signal, 'SIGKILL')
  const restarted = await start()
  t.after(() => restarted.stop())
  await audit(t, restarted.url, id, tills)
}

test('kill -9 under sales (SQLite): every acknowledged sale once in the ledger; retried with their keys, the others at most once; levels = ledger = record', async (t) => {
  const dir = tempDir('plants-stock-kill')
  t.after(dir.remove)
  await killUnderSales(t, () => startService({ dataDir: dir.path }))
})

const POSTGRES = { skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set' }

test('kill -9 under sales (PostgreSQL): every acknowledged sale once in the ledger; retried with their keys, the others at most once; levels = ledger = record', POSTGRES, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  await killUnderSales(t, () => startService({ env: { DATABASE_URL: scratch.url } }))
})

test('kill -9 of one of two instances under sales (PostgreSQL): the other keeps selling; every acknowledged sale once, the retried ones at most once', POSTGRES, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const start = (): Promise<ServiceProcess> => startService({ env: { DATABASE_URL: scratch.url } })
  const [a, b] = [await start(), await start()]
  t.after(() => b.stop())
  const id = await stockedPlant(a.url)
  const onA: Till[] = Array.from({ length: TILLS / 2 }, () => ({ acknowledged: [], unanswered: [] }))
  const onB: Till[] = Array.from({ length: TILLS / 2 }, () => ({ acknowledged: [], unanswered: [] }))
  const acknowledgedOn = (tills: Till[]): number => tills.reduce((n, x) => n + x.acknowledged.length, 0)
  let killed = false
  let done = false
  let failure: string | undefined
  const fail = (why: string): void => { failure ??= why; killed = true; done = true; a.child.kill('SIGKILL') }
  let atKill = 0
  const killer = (async () => {
    while (!done && acknowledgedOn(onA) < 150) await new Promise((resolve) => setTimeout(resolve, 5))
    killed = true
    a.child.kill('SIGKILL')
    atKill = acknowledgedOn(onB)
    // The other instance keeps selling: its tills go on until they have sold a few hundred more.
    while (!done && acknowledgedOn(onB) < atKill + 300) await new Promise((resolve) => setTimeout(resolve, 5))
    done = true
  })()
  await Promise.all([
    ...onA.map((x, i) => till(`a${i}`, () => a.url, id, () => killed, x, fail)),
    ...onB.map((x, i) => till(`b${i}`, () => b.url, id, () => done, x, fail)),
    killer
  ])
  assert.equal(failure, undefined)
  assert.equal((await a.exited).signal, 'SIGKILL')
  assert.deepEqual(onB.flatMap((x) => x.unanswered), [], 'the surviving instance answered every sale')
  assert.ok(acknowledgedOn(onB) >= atKill + 300)
  // The killed instance's tills retry at the other one.
  await audit(t, b.url, id, [...onA, ...onB])
})
